"""bertviz-lite: type two sentences and see what BERT does with them, step by step.

    streamlit run app.py

The sidebar (pages/common/_sidebar.py) is drawn here, on every run, so every page shares it; the pages
themselves are thin and call the bertviz_lite package. To add pages, extend PAGES.
"""

import streamlit as st

from pages.common._sidebar import render_sidebar

PAGES = {
    "Explore a sentence pair": [
        st.Page("pages/explore/1_Tokens.py", title="Tokens and masking", icon=":material/token:", default=True),
        st.Page("pages/explore/2_Embeddings.py", title="Embeddings", icon=":material/scatter_plot:"),
        st.Page("pages/explore/3_Attention.py", title="Attention", icon=":material/hub:"),
        st.Page("pages/explore/4_Predictions.py", title="Predictions", icon=":material/lightbulb:"),
    ],
    "Train": [
        st.Page("pages/train/5_Train.py", title="Train", icon=":material/model_training:", url_path="train"),
        st.Page("pages/train/6_Compare_runs.py", title="Compare runs", icon=":material/compare:", url_path="compare"),
        st.Page("pages/train/7_Checkpoints.py", title="Checkpoints", icon=":material/inventory_2:",
                url_path="checkpoints"),
    ],
}

st.set_page_config(page_title="bertviz-lite", page_icon=":material/visibility:", layout="wide")
page = st.navigation(PAGES)
render_sidebar()
page.run()
