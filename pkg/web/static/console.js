// Slipway console: the web upload of a build, with progress. Without this script the console
// works as plain forms, the upload box too: it is then one multipart POST (/console/upload) that
// answers with the new build's page.
//
// The upload is a resumable upload session (POST /console/channels/:id/uploads, or
// /console/uploads from the console's home and an app's page, where the build makes or finds its
// app, scheme and channel as the API's upload without channel_key does): each part of the
// file is PUT straight to where the session says (a presigned S3 URL, or the service's own signed
// URL), retried when it fails; when the part URLs expire, the session is asked for fresh ones.
// Completing the session parses and records the build exactly as every other upload.
//
// The session's id is kept in localStorage under the channel and the file's name, size and date,
// so that uploading the same file again (after a failure, or after the page was closed) resumes
// the session: only the parts not yet stored are sent.
'use strict';

(function () {
  const partAttempts = 4;

  function csrf(form) {
    return form.querySelector('input[name="csrf"]').value;
  }

  // call sends a console request and returns its JSON, or throws its {"error"} message.
  async function call(form, method, url, body) {
    const res = await fetch(url, {
      method: method,
      body: body,
      credentials: 'same-origin',
      headers: { 'X-CSRF-Token': csrf(form), 'Accept': 'application/json' },
    });
    let data = {};
    try { data = await res.json(); } catch (e) { /* not JSON: the status says it */ }
    if (!res.ok) {
      const err = new Error(data.error || ('the server answered ' + res.status));
      err.entry = data.entry || {};
      throw err;
    }
    return data;
  }

  // put sends one part with XMLHttpRequest, the only browser API that reports upload progress.
  function put(url, blob, onProgress, ctl) {
    return new Promise(function (resolve, reject) {
      const xhr = new XMLHttpRequest();
      ctl.xhr = xhr;
      xhr.onabort = function () { reject({ status: 0, cancelled: true }); };
      xhr.open('PUT', url);
      xhr.upload.onprogress = function (e) { onProgress(e.loaded); };
      xhr.onload = function () {
        if (xhr.status >= 200 && xhr.status < 300) { resolve(); } else { reject({ status: xhr.status }); }
      };
      xhr.onerror = function () { reject({ status: 0 }); };
      xhr.send(blob);
    });
  }

  // size shows a byte count as the pages do: "12 KB", "4.0 MB" (binary units).
  function size(n) {
    if (n < 1024) { return n + ' B'; }
    const units = ['KB', 'MB', 'GB', 'TB'];
    let v = n / 1024, i = 0;
    while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
    return (v < 10 ? v.toFixed(1) : Math.round(v)) + ' ' + units[i];
  }

  function wait(ms) { return new Promise(function (r) { setTimeout(r, ms); }); }

  // saved keeps upload session ids across page loads; storage may be refused (private modes).
  const saved = {
    get: function (k) { try { return window.localStorage.getItem(k); } catch (e) { return null; } },
    set: function (k, v) { try { window.localStorage.setItem(k, v); } catch (e) { /* no resuming */ } },
    remove: function (k) { try { window.localStorage.removeItem(k); } catch (e) { /* nothing kept */ } },
  };

  function setup(form) {
    const input = form.querySelector('input[type="file"]');
    const drop = form.querySelector('.dropzone');
    const chosen = form.querySelector('.upload-file');
    const bar = form.querySelector('progress');
    const status = form.querySelector('.upload-status');
    const button = form.querySelector('button[type="submit"]');
    const cancel = form.querySelector('.upload-cancel');
    let ctl = null;
    cancel.addEventListener('click', function () {
      if (ctl) {
        ctl.cancelled = true;
        if (ctl.xhr) { ctl.xhr.abort(); }
      }
    });
    form.closest('.upload-box').hidden = false;

    // show names the chosen file on one line of its own (a long name is cut with an ellipsis and
    // given whole as the line's title), so the fields below it never move.
    function show(file) {
      chosen.textContent = file ? file.name + ' · ' + size(file.size) : '';
      chosen.title = file ? file.name : '';
    }
    input.addEventListener('change', function () { show(input.files[0]); });
    ['dragenter', 'dragover'].forEach(function (type) {
      drop.addEventListener(type, function (e) { e.preventDefault(); drop.classList.add('over'); });
    });
    ['dragleave', 'drop'].forEach(function (type) {
      drop.addEventListener(type, function () { drop.classList.remove('over'); });
    });
    drop.addEventListener('drop', function (e) {
      e.preventDefault();
      const files = e.dataTransfer.files;
      if (files.length > 1) {
        setStatus('Drop one build at a time: ' + files.length + ' files were dropped, none was taken.', 'error');
        return;
      }
      if (files.length) {
        input.files = files;
        show(input.files[0]);
        setStatus('', '');
      }
    });
    // setStatus says how the upload goes: green when it worked, red when it failed.
    function setStatus(text, kind) {
      status.textContent = text;
      status.classList.remove('ok', 'error');
      if (kind) { status.classList.add(kind); }
    }

    form.addEventListener('submit', function (e) {
      e.preventDefault();
      const file = input.files[0];
      if (!file) { setStatus('Choose or drop a file first.', 'error'); return; }
      send(file, {});
    });

    // send uploads file with the form's fields and extra ones. A build of another app than the
    // channel holds is refused first: the refusal is shown with a "Keep it anyway" button, which
    // sends the file again saying so (allow_other_bundle_id=true); nothing is kept silently.
    async function send(file, extra) {
      // What follows a recorded build, once the upload is over (leaving the page mid-upload asks
      // first, so neither may happen while it counts as uploading).
      let next = null, refresh = false;
      button.disabled = true;
      cancel.hidden = false;
      ctl = { cancelled: false, xhr: null };
      uploading++;
      bar.hidden = false;
      bar.value = 0;
      bar.classList.remove('failed');
      setStatus('Starting…', '');
      try {
        const result = await upload(form, file, ctl, extra, function (sent) {
          bar.value = sent / file.size;
          setStatus('Uploading: ' + Math.floor(100 * sent / file.size) + '% of ' + size(file.size), '');
        });
        bar.value = 1;
        setStatus('Uploaded ' + result.version + '.' + (result.warnings || []).map(function (w) { return ' ' + w + '.'; }).join(''), 'ok');
        // The box is emptied, so a second click cannot send the same build again.
        input.value = '';
        form.querySelector('textarea[name="changelog"]').value = '';
        // (A signature is the file's: the next build needs its own.)
        form.querySelectorAll('[name="ed_signature"], [name="tauri_signature"]').forEach(function (el) { el.value = ''; });
        show(null);
        status.dataset.releaseId = result.release_id;
        const link = document.createElement('a');
        // "Show it" opens the new build's page (its facts, tester link, QR code).
        link.href = result.console_url;
        link.textContent = ' Show it';
        link.id = 'upload-done';
        status.appendChild(link);
        if (form.dataset.after === 'build') {
          // The home and app pages' box: on to the build's page, as the form without script goes.
          next = result.console_url;
        } else {
          refresh = true;
        }
      } catch (err) {
        // The bar shows the failure: red, and never full (a refused build is not kept, so none of
        // it counts as stored; a cancelled or cut upload keeps the parts stored, for resuming).
        bar.classList.add('failed');
        if (!ctl.cancelled && !err.resumable) { bar.value = 0; }
        if (ctl.cancelled) {
          setStatus('Upload cancelled. Choosing the same file again resumes it where it stopped.', 'error');
        } else if (err.entry && err.entry.allow_other_bundle_id && !extra.allow_other_bundle_id) {
          setStatus('Not kept: ' + err.message + ' ', 'error');
          const keep = document.createElement('button');
          keep.type = 'button';
          keep.className = 'button small';
          keep.id = 'upload-keep-anyway';
          keep.textContent = 'Keep it anyway';
          keep.addEventListener('click', function () { send(file, Object.assign({}, extra, { allow_other_bundle_id: 'true' })); });
          status.appendChild(keep);
        } else {
          setStatus('Upload failed: ' + err.message, 'error');
        }
      } finally {
        button.disabled = false;
        cancel.hidden = true;
        uploading--;
      }
      if (next) {
        window.location.assign(next);
      } else if (refresh) {
        await refreshBuilds();
      }
    }
  }

  // refreshBuilds shows the page's builds list as it is now, with the build just uploaded: the
  // page is fetched again and its list put in place of this one (a failure leaves the page as
  // it is; "Show it" still opens the build).
  async function refreshBuilds() {
    const here = document.getElementById('builds');
    if (!here) { return; }
    try {
      const res = await fetch(window.location.href, { credentials: 'same-origin', headers: { 'Accept': 'text/html' } });
      if (!res.ok) { return; }
      const doc = new DOMParser().parseFromString(await res.text(), 'text/html');
      const fresh = doc.getElementById('builds');
      if (fresh) { here.replaceWith(document.importNode(fresh, true)); }
    } catch (e) { /* the list stays as it was */ }
  }

  // sniffBytes reads what says which platform the file is for (issue 34): its first 4 KiB and,
  // for a zip, its end from its central directory (found from the end record) or its last
  // 64 KiB, whichever starts first (the last 4 KiB of another file), as base64, so the server
  // refuses a build of the wrong platform for the channel before a part is sent. A directory
  // over the limit sends only the last 4 KiB: the server then cannot tell, and the completion
  // decides as before.
  const sniffLimit = 512 * 1024;
  async function bytesOf(blob) { return new Uint8Array(await blob.arrayBuffer()); }
  function base64(bytes) {
    let s = '';
    for (let i = 0; i < bytes.length; i += 0x8000) { s += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000)); }
    return btoa(s);
  }
  async function sniffBytes(file) {
    const head = await bytesOf(file.slice(0, Math.min(file.size, 4096)));
    let from = Math.max(0, file.size - 4096);
    if (head.length >= 4 && head[0] === 0x50 && head[1] === 0x4b) {
      const endFrom = Math.max(0, file.size - (65535 + 22));
      const end = await bytesOf(file.slice(endFrom));
      const v = new DataView(end.buffer);
      for (let i = end.length - 22; i >= 0; i--) {
        if (v.getUint32(i, true) === 0x06054b50) {
          const dir = v.getUint32(i + 16, true);
          // (From the directory, or from where the end record is looked for, if that is earlier.)
          if (dir !== 0xffffffff && dir < file.size) { from = Math.min(dir, endFrom); }
          break;
        }
      }
      if (file.size - from + head.length > sniffLimit) { from = Math.max(0, file.size - 4096); }
    }
    const tail = await bytesOf(file.slice(from));
    return { head: base64(head), tail: base64(tail) };
  }

  async function upload(form, file, ctl, extra, onProgress) {
    // (The app a box names, and a chosen name, are part of where the session's build goes.)
    const where = ['app_id', 'name'].map(function (k) {
      const el = form.querySelector('[name="' + k + '"]');
      return el ? el.value.trim() : '';
    }).join(',');
    const key = 'slipway-upload:' + form.dataset.start + ':' + where + ':' + file.name + ':' + file.size + ':' + file.lastModified;
    let session = null;
    const earlier = saved.get(key);
    if (earlier) {
      try {
        const s = await call(form, 'GET', form.dataset.sessions + encodeURIComponent(earlier));
        if (s.state === 'open') { session = s; }
      } catch (e) { /* expired or gone: start again */ }
    }
    if (!session) {
      const start = new URLSearchParams({
        filename: file.name,
        size: String(file.size),
        changelog: form.querySelector('textarea[name="changelog"]').value,
      });
      // Where the build goes (an app's page), the app's name when one was chosen, and the update
      // feeds' signatures when given.
      ['app_id', 'name', 'ed_signature', 'tauri_signature'].forEach(function (k) {
        const el = form.querySelector('[name="' + k + '"]');
        if (el && el.value.trim()) { start.set(k, el.value.trim()); }
      });
      // The file's first and last bytes, which a channel's session start checks the platform by.
      if (form.querySelector('input[name="channel_id"]')) {
        try {
          const b = await sniffBytes(file);
          start.set('head', b.head);
          start.set('tail', b.tail);
        } catch (e) { /* not readable here: the completion checks it */ }
      }
      // Extra fields of this attempt (allow_other_bundle_id after "Keep it anyway").
      Object.keys(extra).forEach(function (k) { start.set(k, extra[k]); });
      session = await call(form, 'POST', form.dataset.start, start);
      saved.set(key, session.id);
    }
    const sessionURL = form.dataset.sessions + encodeURIComponent(session.id);
    const sent = {};
    const total = function () { return Object.values(sent).reduce(function (a, b) { return a + b; }, 0); };
    for (const first of session.parts) {
      if (first.done) { sent[first.number] = first.size; continue; }
      const from = (first.number - 1) * session.part_size;
      const blob = file.slice(from, from + first.size);
      let part = first;
      for (let attempt = 1; ; attempt++) {
        if (ctl.cancelled) { throw new Error('cancelled'); }
        try {
          await put(part.url, blob, function (n) { sent[part.number] = n; onProgress(total()); }, ctl);
          sent[part.number] = part.size;
          break;
        } catch (err) {
          sent[part.number] = 0;
          if (err.cancelled || ctl.cancelled) { throw new Error('cancelled'); }
          if (attempt >= partAttempts) {
            const cut = new Error('part ' + part.number + ' could not be sent (status ' + err.status + ')');
            cut.resumable = true; // the parts stored stay: the bar shows them
            throw cut;
          }
          await wait(500 * attempt);
          // The URL may have expired, or the part been stored after all: ask the session.
          session = await call(form, 'GET', sessionURL);
          part = session.parts.find(function (p) { return p.number === first.number; });
          if (part.done) { sent[part.number] = part.size; break; }
        }
      }
      onProgress(total());
    }
    if (ctl.cancelled) { throw new Error('cancelled'); }
    try {
      return await call(form, 'POST', sessionURL + '/complete');
    } finally {
      // Completed, or refused (a refused package ends the session): nothing left to resume.
      const s = await call(form, 'GET', sessionURL).catch(function () { return null; });
      if (!s || s.state !== 'open') { saved.remove(key); }
    }
  }

  // Leaving the page mid-upload asks first (the upload can be resumed, but not from nothing).
  let uploading = 0;
  window.addEventListener('beforeunload', function (e) {
    if (uploading > 0) { e.preventDefault(); e.returnValue = ''; }
  });

  document.querySelectorAll('form.upload').forEach(setup);
})();
