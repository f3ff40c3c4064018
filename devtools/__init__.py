"""Helpers that tests/ and bench/ both import: a `streamlit run app.py` on a free port, and waiting on state."""
