// Keeps the first tab's visitor id in the cookie and a later tab's id as an alias of it (pages_app/common/_visitor.py).
// Its placeholders are filled in by cookie_script() with Python string formatting.
const doc = window.parent.document, id = %(id)r, tail = "; path=/; max-age=%(age)d; SameSite=Strict";
const read = (name) => (doc.cookie.match(new RegExp("(?:^|; )" + name + "=([^;]*)")) || [])[1];
const first = read(%(cookie)r);
if (!first) {
  doc.cookie = %(cookie)r + "=" + id + tail;
} else if (first !== id) {
  const ids = (read(%(alias)r) || "").split(".").filter((x) => x && x !== id).slice(-%(keep)d);
  doc.cookie = %(alias)r + "=" + [...ids, id].join(".") + tail;
}
