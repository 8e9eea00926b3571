// mlrig web, progressive enhancement only: every page works without this script.
// 1. GET forms leave out blank fields, so a shared URL holds only what was set.
// 2. The plan page sends only the header of a large model file (the server reads nothing else);
//    without JavaScript the whole file is sent, up to the server's size cap.
"use strict";
(function () {
  for (const f of document.querySelectorAll("form[method=get]")) {
    f.addEventListener("submit", function (ev) {
      if (ev.submitter && ev.submitter.getAttribute("formmethod") === "post") return;
      for (const el of f.querySelectorAll("input, select")) {
        if (el.name && !el.disabled && (el.type === "file" || el.type === "hidden" || el.value === "")) {
          el.disabled = true; // not submitted
          setTimeout(function () { el.disabled = false; }, 0);
        }
      }
    });
  }
})();
(function () {
  const form = document.getElementById("plan-form");
  const button = document.getElementById("upload-button");
  if (!form || !button) return;
  const LIMIT = 32 * 1024 * 1024; // the server's cap for a weights header

  async function headerLength(file) {
    if (file.name.toLowerCase().endsWith(".safetensors")) {
      // u64 little-endian header length, then the JSON header (safetensors format)
      const view = new DataView(await file.slice(0, 8).arrayBuffer());
      const n = Number(view.getBigUint64(0, true));
      return Math.min(file.size, 8 + n);
    }
    return Math.min(file.size, LIMIT); // GGUF: metadata and tensor table come first
  }

  button.addEventListener("click", async function (ev) {
    const input = document.getElementById("f-weights");
    const file = input && input.files && input.files[0];
    if (!file || file.size <= LIMIT) return; // small enough: let the browser send it as it is
    ev.preventDefault();
    const data = new FormData(form);
    const n = await headerLength(file);
    data.set("weights", new File([file.slice(0, n)], file.name));
    data.set("weights_size", String(file.size));
    button.disabled = true;
    button.textContent = "Reading the header…";
    const response = await fetch("/plan", { method: "POST", body: data });
    const html = await response.text();
    document.open();
    document.write(html);
    document.close();
  });
})();
