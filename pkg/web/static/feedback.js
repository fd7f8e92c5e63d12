// The release page's Send feedback form: fills its Device and System fields with what the
// browser says of itself, so a tester need not look it up. The fields stay editable, a value
// already there (typed, or kept by a refused form) is left alone, and without this script the
// form works the same with the fields empty.
(function () {
  'use strict';
  var form = document.getElementById('feedback-form');
  if (!form) return;
  var device = form.elements.device, system = form.elements.os_version;
  if (!device || !system) return;
  // filled remembers what this script wrote, so a better answer may replace it but never what
  // the tester typed.
  var filled = { device: null, os: null };
  function put(d, o) {
    if (d && (device.value === '' || device.value === filled.device)) { device.value = d; filled.device = d; }
    if (o && (system.value === '' || system.value === filled.os)) { system.value = o; filled.os = o; }
  }
  function dots(v) { return v.replace(/_/g, '.'); }

  // The user agent string: an iPhone's or iPad's system version, Android's version and model.
  var ua = navigator.userAgent || '', m, apple = false;
  if ((m = ua.match(/\((iPhone|iPad|iPod)[^)]*? OS (\d+(?:_\d+)*)/))) {
    apple = true;
    put(m[1], (m[1] === 'iPad' ? 'iPadOS ' : 'iOS ') + dots(m[2]));
  } else if (/Macintosh/.test(ua) && navigator.maxTouchPoints > 1) {
    // An iPad asks for the desktop site with a Mac's user agent; its version is the browser's.
    apple = true;
    m = ua.match(/Version\/(\d+(?:\.\d+)*)/);
    put('iPad', m ? 'iPadOS ' + m[1] : 'iPadOS');
  } else if ((m = ua.match(/Android (\d+(?:\.\d+)*)(?:; ([^;)]+))?/))) {
    var model = (m[2] || '').replace(/\s+Build\/.*$/, '').trim();
    put(model && model !== 'K' ? model : 'Android device', 'Android ' + m[1]);
  } else if ((m = ua.match(/Mac OS X (\d+(?:[_.]\d+)*)/))) {
    put('Mac', 'macOS ' + dots(m[1]));
  } else if (/Windows NT/.test(ua)) {
    put('PC', 'Windows');
  } else if (/Linux/.test(ua)) {
    put('PC', 'Linux');
  }

  // Chromium's client hints know a phone's model and the exact system version, which its
  // reduced user agent string no longer says (Android's "K").
  var uad = navigator.userAgentData;
  if (apple || !uad || !uad.getHighEntropyValues) return;
  uad.getHighEntropyValues(['model', 'platformVersion']).then(function (v) {
    var names = { 'macOS': 'macOS', 'Windows': 'Windows', 'Android': 'Android', 'Chrome OS': 'ChromeOS', 'Linux': 'Linux' };
    var platform = names[v.platform] || v.platform || '';
    var version = v.platformVersion || '';
    if (platform === 'Windows' && version) {
      // Windows 11 reports platform versions from 13 up.
      version = parseInt(version, 10) >= 13 ? '11' : '10';
    }
    put(v.model || '', platform ? (platform + (version ? ' ' + version : '')) : '');
  }, function () {});
})();
