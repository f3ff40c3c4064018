"""bertviz-lite: a from-scratch PyTorch BERT for seeing, and learning, how BERT works."""
