// ReDoc over this service's OpenAPI document, from the packaged copy (no CDN), in colours that
// meet WCAG AA contrast; the example pickers it leaves unnamed get a name.
"use strict";
(() => {
  const THEME = {
    colors: {
      primary: { main: "#0a58ca" },
      text: { primary: "#1b1f24", secondary: "#57606a" },
      success: { main: "#116329" },
      error: { main: "#b42318" },
      responses: {
        success: { color: "#116329", tabTextColor: "#7ee2a8" },
        error: { color: "#b42318", tabTextColor: "#ffaba8" },
        redirect: { color: "#7d4e00", tabTextColor: "#ffd58a" },
        info: { color: "#0a58ca", tabTextColor: "#a5d6ff" },
      },
      http: {
        get: "#0a58ca", post: "#116329", put: "#7d4e00", delete: "#b42318",
        patch: "#6f42c1", options: "#57606a", head: "#57606a",
      },
    },
    typography: {
      code: { color: "#9a1b1b", backgroundColor: "#f6f8fa" },
      links: { color: "#0a58ca" },
    },
    schema: { typeNameColor: "#57606a", typeTitleColor: "#57606a", requireLabelColor: "#b42318" },
  };

  function nameTheControls(root) {
    for (const select of root.querySelectorAll("select:not([aria-label]):not([aria-labelledby])")) {
      if (select.labels && select.labels.length) continue;
      select.setAttribute("aria-label", "Example");
    }
  }

  window.addEventListener("load", () => {
    const root = document.getElementById("redoc");
    Redoc.init("/openapi.json", { theme: THEME, hideLoading: true }, root, () => {
      nameTheControls(root);
      new MutationObserver(() => nameTheControls(root)).observe(root, { childList: true, subtree: true });
    });
  });
})();
