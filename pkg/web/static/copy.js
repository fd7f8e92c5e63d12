// Slipway: a "Copy" button beside a value to paste elsewhere (a device's UDID). The button is
// hidden without this script; the value stays selectable by hand.
'use strict';

(function () {
  document.querySelectorAll('button[data-copy]').forEach(function (button) {
    const source = document.getElementById(button.dataset.copy);
    if (!source || !navigator.clipboard) { return; }
    button.hidden = false;
    button.addEventListener('click', function () {
      navigator.clipboard.writeText(source.textContent.trim()).then(function () {
        button.textContent = 'Copied';
        setTimeout(function () { button.textContent = 'Copy'; }, 2000);
      });
    });
  });
})();
