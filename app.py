"""bertviz-lite: type two sentences and see what BERT does with them, step by step.

    streamlit run app.py

The sidebar (pages_app/common/_sidebar.py) is drawn here, on every run, so every page shares it; the pages
themselves are thin and call the bertviz_lite package. To add a page, declare it in pages_app/common/_pages.py.
The view's state lives in the URL (pages_app/common/_share.py): a shared link opens the same view.
"""

import gc
import sys

import streamlit as st
from streamlit.runtime import Runtime

# A process's first run imports torch, pandas and plotly here: 370,000 objects that live as long as the process. The
# cyclic collector walked them in three or four full collections as they came in (0.2 CPU-s each), and again in every
# full collection after; frozen once in, it leaves them alone (their 0.9 MB of import-time cycles stay). Later runs
# import nothing here and leave the collector as it is.
cold = "bertviz_lite" not in sys.modules
if cold:
    gc.disable()
try:
    from bertviz_lite.server import app_routes, live_class
    from pages_app.common._pages import follow_any_case, navigation
    from pages_app.common._share import PRESENT, apply_link, link_control, show_link_notes, sync_link
    from pages_app.common._sidebar import hand_over, render_sidebar
    from pages_app.common._ui import presentation_style
    from pages_app.explore._warm_up import start_warm_up

    # Once per process: the route that sets HttpOnly cookies, and the gate in front of Streamlit's upload route. Before
    # the freeze: it finds Streamlit's Starlette app among the collector's objects, which leave out frozen ones.
    app_routes.install(Runtime.instance().uploaded_file_mgr)
finally:
    if cold:
        gc.freeze()
        gc.enable()

start_warm_up()  # once per process: the default pair's model and trace, in the background, for the visitors to come
live_class.start_purge_timer()  # once per process: classes ended KEEP_DAYS ago go, hourly
apply_link()  # a shared link's state (?a=…&layer=…&present=1), on a session's first run
st.set_page_config(
    page_title="bertviz-lite",
    page_icon="🔎",
    layout="wide",  # an emoji: a material icon is fetched from Google
    initial_sidebar_state="collapsed" if st.session_state.get(PRESENT) else "auto",
)
follow_any_case()  # /attention reaches the Attention page, as /Attention does
page = st.navigation(navigation())
inputs = render_sidebar()
presentation_style()
sync_link(page.url_path)
link_control(page.url_path)
show_link_notes()
hand_over(inputs)  # the page's load_context() builds this run's one Context from them
page.run()
