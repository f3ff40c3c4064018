"""bertviz-lite: type two sentences and see what BERT does with them, step by step.

    streamlit run app.py

The sidebar (pages/common/_sidebar.py) is drawn here, on every run, so every page shares it; the pages
themselves are thin and call the bertviz_lite package. To add pages, extend PAGES. The view's state lives
in the URL (pages/common/_share.py): a shared link opens the same view.
"""

import streamlit as st

from pages.common._share import PRESENT, apply_link, link_control, show_link_notes, sync_link
from pages.common._sidebar import render_sidebar
from pages.common._ui import presentation_style

PAGES = {
    "Explore a sentence pair": [
        st.Page("pages/explore/0_Walkthrough.py", title="Walkthrough", icon=":material/school:", default=True),
        st.Page("pages/explore/1_Tokens.py", title="Tokens and masking", icon=":material/token:"),
        st.Page("pages/explore/2_Embeddings.py", title="Embeddings", icon=":material/scatter_plot:"),
        st.Page("pages/explore/3_Attention.py", title="Attention", icon=":material/hub:"),
        st.Page("pages/explore/4_Predictions.py", title="Predictions", icon=":material/lightbulb:"),
        st.Page("pages/explore/5_Beyond_attention.py", title="Beyond attention", icon=":material/troubleshoot:"),
        st.Page("pages/explore/7_Why_this_word.py", title="Why this word", icon=":material/compare_arrows:"),
    ],
    "Train": [
        st.Page("pages/train/5_Train.py", title="Train", icon=":material/model_training:", url_path="train"),
        st.Page("pages/train/6_Compare_runs.py", title="Compare runs", icon=":material/compare:", url_path="compare"),
        st.Page("pages/train/7_Checkpoints.py", title="Checkpoints", icon=":material/inventory_2:",
                url_path="checkpoints"),
    ],
}

apply_link()  # a shared link's state (?a=…&layer=…&present=1), on a session's first run
st.set_page_config(page_title="bertviz-lite", page_icon="🔎", layout="wide",  # an emoji: a material icon is fetched from Google
                   initial_sidebar_state="collapsed" if st.session_state.get(PRESENT) else "auto")
page = st.navigation(PAGES)
render_sidebar()
presentation_style()
sync_link(page.url_path)
link_control(page.url_path)
show_link_notes()
page.run()
