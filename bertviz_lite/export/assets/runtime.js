// The script of an exported file (bertviz_lite/export): it unpacks plotly.js and the figures that this file carries
// (gzip, base64), then draws the figure each view's pickers name, the predict-then-reveal questions and, in a lesson,
// one step at a time (Next/Previous, the arrow keys, PageDown/PageUp). Nothing is fetched: every byte is in the file.
(async () => {
  "use strict";
  const settings = JSON.parse(document.getElementById("bvl-settings").textContent);
  const status = document.getElementById("bvl-status");

  async function unpack(id) {
    const text = document.getElementById(id).textContent.trim();
    const binary = atob(text);
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(stream).text();
  }

  if (typeof DecompressionStream === "undefined" || typeof structuredClone === "undefined") {
    status.textContent = "This browser cannot unpack the figures of this file: it needs Chrome or Edge 98, " +
      "Firefox 113, Safari 16.4 or a later version.";
    return;
  }
  const library = document.createElement("script");
  library.textContent = await unpack("bvl-plotly");  // runs as it is added: window.Plotly
  document.head.appendChild(library);
  const data = JSON.parse(await unpack("bvl-data"));
  const state = data.views.map(view => ({...view.pickers}));
  const keyOf = (keys, view) => keys.map(name => state[view][name]).join("|");
  const shown = element => element.getClientRects().length > 0;

  function config(name) {
    const svg = {name: "bvl-svg", title: settings.svgTitle, icon: settings.svgIcon,
      click: gd => Plotly.downloadImage(gd, {format: "svg", filename: name})};
    return {displaylogo: false, responsive: true, modeBarButtonsToAdd: [svg],
      toImageButtonOptions: {format: "png", filename: name, scale: 2}};
  }

  function traces(area, figure) {
    const traces = structuredClone(figure.data);
    if (!area.head_filter) return traces;
    const head = state[area.view][area.head_filter];
    for (const trace of traces) {
      const own = trace.meta && trace.meta.head !== undefined;
      if (own && head !== "all" && String(trace.meta.head) !== head) trace.visible = "legendonly";
    }
    return traces;
  }

  async function drawArea(element) {
    if (!shown(element)) return;
    const area = data.areas[Number(element.dataset.area)];
    const key = keyOf(area.keys, area.view);
    const drawn = key + "#" + (area.head_filter ? state[area.view][area.head_filter] : "");
    if (element.dataset.drawn === drawn) return Plotly.Plots.resize(element);
    element.dataset.drawn = drawn;
    const figure = data.figures[area.figures[key]];
    const layout = {...structuredClone(figure.layout), template: figure.layout.template || data.template};
    await Plotly.react(element, traces(area, figure), layout, config(area.name));
    if (area.click.length && !element.bvlClick) {
      element.bvlClick = true;
      element.on("plotly_click", event => pick(area, event));
    }
  }

  function setPicker(view, name, value) {
    const select = document.querySelector(`select[data-view="${view}"][data-picker="${name}"]`);
    if (!select || ![...select.options].some(option => option.value === value)) return;
    select.value = value;
    state[view][name] = value;
  }

  function pick(area, event) {  // a click on a point (a model view's tile) sets the pickers from its customdata
    const point = (event.points || [])[0];
    if (!point || point.customdata == null || point.customdata.length === undefined) return;
    area.click.forEach((name, i) => setPicker(area.view, name, String(point.customdata[i])));
    refresh(area.view);
  }

  function drawAsk(element) {
    const ask = data.asks[Number(element.dataset.ask)];
    const key = keyOf(ask.keys, ask.view);
    if (element.dataset.key === key) return;
    element.dataset.key = key;  // a new question: the old answer does not carry over
    const question = ask.questions[key];
    element.querySelector(".bvl-prompt").textContent = "Your guess. " + question.prompt;
    const options = question.options.map((text, i) => {
      const label = document.createElement("label");
      const input = document.createElement("input");
      input.type = "radio";
      input.name = "bvl-ask-" + element.dataset.ask;
      input.value = String(i);
      label.append(input, " ", text);  // a text node: shown exactly as written
      return label;
    });
    element.querySelector(".bvl-options").replaceChildren(...options);
    hideAnswer(element);
  }

  function hideAnswer(element) {
    element.querySelector(".bvl-revealed").hidden = true;
    element.querySelector(".bvl-options").hidden = false;
    element.querySelector(".bvl-reveal-button").hidden = false;
  }

  function reveal(element) {
    const question = data.asks[Number(element.dataset.ask)].questions[element.dataset.key];
    const chosen = element.querySelector(".bvl-options input:checked");
    const [correct, message] = chosen ? question.verdicts[Number(chosen.value)] : [false, question.none];
    const verdict = element.querySelector(".bvl-verdict");
    verdict.textContent = message;
    verdict.className = "bvl-verdict " + (correct ? "bvl-right" : "bvl-wrong");
    element.querySelector(".bvl-revealed").hidden = false;
    element.querySelector(".bvl-options").hidden = true;
    element.querySelector(".bvl-reveal-button").hidden = true;
    return Promise.all([...element.querySelectorAll(".bvl-figure")].map(drawArea));
  }

  function refresh(view) {
    const root = document.querySelector(`.bvl-view[data-view="${view}"]`);
    root.querySelectorAll(".bvl-ask").forEach(drawAsk);
    return Promise.all([...root.querySelectorAll(".bvl-figure")].map(drawArea));
  }

  document.querySelectorAll("select[data-picker]").forEach(select => select.addEventListener("change", () => {
    state[Number(select.dataset.view)][select.dataset.picker] = select.value;
    refresh(Number(select.dataset.view));
  }));
  document.querySelectorAll(".bvl-ask").forEach(element => {
    element.querySelector(".bvl-reveal-button").addEventListener("click", () => reveal(element));
    element.querySelector(".bvl-again").addEventListener("click", () => hideAnswer(element));
  });

  const steps = [...document.querySelectorAll(".bvl-step")];
  const previous = document.getElementById("bvl-previous"), next = document.getElementById("bvl-next");
  let current = 0;
  async function show(number) {
    current = Math.max(0, Math.min(steps.length - 1, number));
    steps.forEach((step, i) => { step.hidden = i !== current; });
    document.getElementById("bvl-counter").textContent = `Step ${current + 1} of ${steps.length}`;
    previous.disabled = current === 0;
    next.disabled = current === steps.length - 1;
    try { history.replaceState(null, "", "#step-" + (current + 1)); } catch (error) { /* a file: URL may refuse */ }
    const views = steps[current].querySelectorAll(".bvl-view");
    await Promise.all([...views].map(view => refresh(Number(view.dataset.view))));
  }
  if (steps.length) {
    previous.addEventListener("click", () => show(current - 1));
    next.addEventListener("click", () => show(current + 1));
    document.addEventListener("keydown", event => {
      const moves = {ArrowRight: 1, PageDown: 1, ArrowLeft: -1, PageUp: -1};
      const typing = event.target.closest && event.target.closest("input, select, textarea");
      if (!(event.key in moves) || typing || event.altKey || event.ctrlKey || event.metaKey) return;
      event.preventDefault();
      show(current + moves[event.key]);
    });
    const linked = () => Number((/^#step-(\d+)$/.exec(location.hash) || [0, 1])[1]) - 1;
    addEventListener("hashchange", () => show(linked()));  // a link to #step-5, or the address edited
    await show(linked());
  } else {
    await Promise.all(data.views.map((_, view) => refresh(view)));
  }
  status.hidden = true;
  document.body.dataset.ready = "true";  // for tests and for print: every script has run
})().catch(error => {
  const status = document.getElementById("bvl-status");
  status.hidden = false;
  status.textContent = "This file could not draw its figures: " + error;
});
