"""Streamlit pages, in sections; app.py lists them with st.navigation.

No page script sits directly in pages/: Streamlit would then treat the folder as an old-style
multipage app on a fresh server and run a deep-linked page without app.py (and its sidebar).
"""
