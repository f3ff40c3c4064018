"""The model: BertConfig, the modules that mirror Hugging Face's modeling_bert.py, their outputs."""
