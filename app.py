"""bertviz-lite: explore a sentence pair with a real BERT."""

import streamlit as st

from bertviz_lite.pretrained import MINILM, load

st.set_page_config(page_title="bertviz-lite", layout="wide")


@st.cache_resource(show_spinner="Loading the model…")
def cached_model(source: str):
    return load(source)


st.title("bertviz-lite")
sentence_a = st.text_input("Sentence A", "The cat sat on the mat.", key="sentence_a")
sentence_b = st.text_input("Sentence B (optional)", "It was tired.", key="sentence_b")
try:
    _, tokenizer = cached_model(MINILM)
    enc = tokenizer.encode_pair(sentence_a, sentence_b or None)
except (ValueError, FileNotFoundError) as err:
    st.error(str(err))
    st.stop()
st.write(" ".join(enc.tokens))
