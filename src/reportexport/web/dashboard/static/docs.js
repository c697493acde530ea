// Swagger UI over this service's OpenAPI document, from the packaged copy (no CDN). The
// document declares the bearer scheme, so its Authorize button takes a person's token and
// "Try it out" sends it. What Swagger UI leaves inaccessible is mended as it renders: deep links
// are off (they put a link inside each operation's button: nested controls), icon buttons get a
// name, and code panels that scroll can be reached from the keyboard.
"use strict";
(() => {
  const NAMES = [
    [".close-modal", "Close"],
    [".copy-to-clipboard button", "Copy to clipboard"],
  ];

  function mend(root) {
    for (const [selector, name] of NAMES) {
      for (const button of root.querySelectorAll(`${selector}:not([aria-label])`)) {
        button.setAttribute("aria-label", name);
      }
    }
    for (const code of root.querySelectorAll(".highlight-code > pre:not([tabindex])")) {
      code.setAttribute("tabindex", "0");
    }
  }

  window.addEventListener("load", () => {
    const root = document.getElementById("swagger-ui");
    window.ui = SwaggerUIBundle({
      url: "/openapi.json",
      dom_id: "#swagger-ui",
      deepLinking: false,
      syntaxHighlight: false,
      presets: [SwaggerUIBundle.presets.apis],
      layout: "BaseLayout",
    });
    new MutationObserver(() => mend(document.body)).observe(document.body, { childList: true, subtree: true });
    mend(root);
  });
})();
