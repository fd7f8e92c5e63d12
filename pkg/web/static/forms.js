// Slipway console: every form's submit button is disabled once the form is sent, so a double
// click sends it once (the server's single-use form token refuses a second send anyway), and a
// form marked data-confirm asks before it is sent. Without this script every form still works:
// the server deduplicates, and destructive forms have their own "confirm" box.
'use strict';

(function () {
  document.querySelectorAll('form[method="post"]:not(.upload)').forEach(function (form) {
    // With script, a form marked data-confirm asks in a dialog instead of its "sure" box.
    const box = form.dataset.confirm ? form.querySelector('label.confirm input[name="confirm"]') : null;
    if (box) {
      box.required = false;
      box.closest('label').hidden = true;
    }
    form.addEventListener('submit', function (e) {
      const question = form.dataset.confirm;
      if (question) {
        if (!window.confirm(question)) {
          e.preventDefault();
          return;
        }
        if (box) { box.checked = true; }
      }
      if (form.dataset.sent) {
        e.preventDefault();
        return;
      }
      form.dataset.sent = '1';
      // Disabled after this event, so the clicked button's name and value are still sent.
      setTimeout(function () {
        form.querySelectorAll('button[type="submit"], input[type="submit"]').forEach(function (b) {
          b.disabled = true;
          b.setAttribute('aria-busy', 'true');
        });
      }, 0);
    });
  });
  // A "Copy" button beside a read-only field (a build's tester and install links) copies it;
  // without script the field can still be selected and copied by hand.
  document.querySelectorAll('button[data-copy]').forEach(function (b) {
    const field = document.getElementById(b.dataset.copy);
    if (!field || !navigator.clipboard) { return; }
    b.hidden = false;
    b.addEventListener('click', function () {
      navigator.clipboard.writeText(field.value).then(function () { b.textContent = 'Copied'; }, function () { field.select(); });
    });
  });
  // A webhook's robot secret is asked only for the formats whose robots sign (DingTalk, Feishu).
  document.querySelectorAll('label.robot-secret[data-formats]').forEach(function (label) {
    const select = label.closest('form') && label.closest('form').querySelector('select[name="format"]');
    if (!select) { return; }
    const formats = label.dataset.formats.split(' ');
    const show = function () { label.hidden = formats.indexOf(select.value) < 0; };
    select.addEventListener('change', show);
    show();
  });
  // Coming back to a page with the back button (bfcache) shows its buttons usable again.
  window.addEventListener('pageshow', function () {
    document.querySelectorAll('form[data-sent]').forEach(function (form) {
      delete form.dataset.sent;
      form.querySelectorAll('button[disabled][aria-busy]').forEach(function (b) { b.disabled = false; b.removeAttribute('aria-busy'); });
    });
  });
})();
