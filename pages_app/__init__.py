"""Streamlit pages, in sections; app.py lists them with st.navigation.

The folder is not called pages/: with a pages/ folder beside app.py, Streamlit 1.67 starts every process in its old
pages-folder mode, so the first visitor's deep link (/Attention) met a "Page not found" dialog (streamlit#9624).
"""
