// Slipway console: the web upload of a build, with progress. Without this script the rest of the
// console works (plain forms); the upload box stays hidden and a <noscript> note points to
// `slipway upload`.
//
// The upload is a resumable upload session (POST /console/channels/:id/uploads): each part of the
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
      throw new Error(data.error || ('the server answered ' + res.status));
    }
    return data;
  }

  // put sends one part with XMLHttpRequest, the only browser API that reports upload progress.
  function put(url, blob, onProgress) {
    return new Promise(function (resolve, reject) {
      const xhr = new XMLHttpRequest();
      xhr.open('PUT', url);
      xhr.upload.onprogress = function (e) { onProgress(e.loaded); };
      xhr.onload = function () {
        if (xhr.status >= 200 && xhr.status < 300) { resolve(); } else { reject({ status: xhr.status }); }
      };
      xhr.onerror = function () { reject({ status: 0 }); };
      xhr.send(blob);
    });
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
    form.closest('.upload-box').hidden = false;

    function show(file) { chosen.textContent = file ? file.name + ' · ' + (file.size / 1048576).toFixed(1) + ' MiB' : ''; }
    input.addEventListener('change', function () { show(input.files[0]); });
    ['dragenter', 'dragover'].forEach(function (type) {
      drop.addEventListener(type, function (e) { e.preventDefault(); drop.classList.add('over'); });
    });
    ['dragleave', 'drop'].forEach(function (type) {
      drop.addEventListener(type, function () { drop.classList.remove('over'); });
    });
    drop.addEventListener('drop', function (e) {
      e.preventDefault();
      if (e.dataTransfer.files.length) {
        input.files = e.dataTransfer.files;
        show(input.files[0]);
      }
    });

    form.addEventListener('submit', async function (e) {
      e.preventDefault();
      const file = input.files[0];
      if (!file) { status.textContent = 'Choose or drop a file first.'; return; }
      button.disabled = true;
      bar.hidden = false;
      bar.value = 0;
      status.textContent = 'Starting…';
      try {
        const result = await upload(form, file, function (sent) {
          bar.value = sent / file.size;
          status.textContent = 'Uploading: ' + Math.floor(100 * sent / file.size) + '%';
        });
        bar.value = 1;
        status.textContent = 'Uploaded ' + result.version + '.';
        status.dataset.releaseId = result.release_id;
        const link = document.createElement('a');
        link.href = result.app_url;
        link.textContent = ' Show it';
        link.id = 'upload-done';
        status.appendChild(link);
        link.addEventListener('click', function () { window.location.reload(); });
      } catch (err) {
        status.textContent = 'Upload failed: ' + err.message;
        status.classList.add('error');
      } finally {
        button.disabled = false;
      }
    });
  }

  async function upload(form, file, onProgress) {
    const key = 'slipway-upload:' + form.dataset.start + ':' + file.name + ':' + file.size + ':' + file.lastModified;
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
        try {
          await put(part.url, blob, function (n) { sent[part.number] = n; onProgress(total()); });
          sent[part.number] = part.size;
          break;
        } catch (err) {
          sent[part.number] = 0;
          if (attempt >= partAttempts) { throw new Error('part ' + part.number + ' could not be sent (status ' + err.status + ')'); }
          await wait(500 * attempt);
          // The URL may have expired, or the part been stored after all: ask the session.
          session = await call(form, 'GET', sessionURL);
          part = session.parts.find(function (p) { return p.number === first.number; });
          if (part.done) { sent[part.number] = part.size; break; }
        }
      }
      onProgress(total());
    }
    try {
      return await call(form, 'POST', sessionURL + '/complete');
    } finally {
      // Completed, or refused (a refused package ends the session): nothing left to resume.
      const s = await call(form, 'GET', sessionURL).catch(function () { return null; });
      if (!s || s.state !== 'open') { saved.remove(key); }
    }
  }

  document.querySelectorAll('form.upload').forEach(setup);
})();
