"""Text: the WordPiece tokenizer, vocabulary learning, MLM masking, corpora and pre-training batches."""
