"""Live class: the lecturer leads the walkthrough from the projector; students follow and answer on their phones."""

import streamlit as st

from pages_app.live_class._lecturer import JOIN_PARAM, lead, leading, start_button
from pages_app.live_class._student import follow, join, join_form, joined

AUTO_JOINED = "class_link_tried"  # a ?class=CODE link joins once; a refusal is not repeated on every rerun

lecturer = leading()
link_code = st.query_params.get("class", "")
if lecturer is None and joined() is None and link_code and st.session_state.get(AUTO_JOINED) != link_code:
    st.session_state[AUTO_JOINED] = link_code
    join(link_code, st.query_params.get(JOIN_PARAM, ""))  # the QR code's token: not counted as a wrong code
if lecturer is not None:
    lead(*lecturer)
elif joined() is not None:
    follow(*joined())
else:
    st.header("Live class", anchor=False)
    student, teacher = st.columns(2, gap="large")
    with student:
        st.subheader("Join as a student", anchor=False)
        join_form()
    with teacher:
        st.subheader("Lead a class", anchor=False)
        st.caption(
            "Start a class on the pair in the sidebar. Students join with the code or the QR code on your "
            "screen; their screens follow your steps, and they answer the walkthrough's questions before you "
            "reveal the model's answer."
        )
        start_button()
