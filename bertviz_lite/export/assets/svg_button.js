// Every plotly chart of the app's page gets an SVG button beside its PNG one (bertviz_lite/export/toolbar.py). The
// app's charts take no JavaScript in their config, so the button is added to each toolbar here: a click asks plotly's
// own PNG button for an SVG (the format that button reads when clicked), then sets the format back.
(() => {
  if (window.__bvlSvgButtons) return;
  const SETTINGS = __SETTINGS__;
  const NS = "http://www.w3.org/2000/svg";
  function icon() {
    const svg = document.createElementNS(NS, "svg");
    svg.setAttribute("viewBox", `0 0 ${SETTINGS.icon.width} ${SETTINGS.icon.height}`);
    svg.setAttribute("class", "icon");
    svg.setAttribute("height", "1em");
    svg.setAttribute("width", "1em");
    const path = document.createElementNS(NS, "path");
    path.setAttribute("d", SETTINGS.icon.path);
    svg.appendChild(path);
    return svg;
  }
  function addButton(gd) {
    const camera = gd.querySelector('.modebar-btn[data-title^="Download plot"]');
    if (!camera || gd.querySelector(".bvl-svg-button")) return;
    const button = camera.cloneNode(false);
    button.classList.add("bvl-svg-button");
    button.setAttribute("data-title", SETTINGS.title);
    button.setAttribute("aria-label", SETTINGS.title);
    button.appendChild(icon());
    button.addEventListener("click", event => {
      event.preventDefault();
      event.stopPropagation();
      const options = gd._context && gd._context.toImageButtonOptions;
      if (!options) return;
      const format = options.format;
      options.format = "svg";
      try { camera.click(); } finally { options.format = format; }
    });
    camera.after(button);
  }
  window.__bvlSvgButtons = setInterval(() => document.querySelectorAll(".js-plotly-plot").forEach(addButton), 500);
})();
