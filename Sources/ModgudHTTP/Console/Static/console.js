// The operator console's passkey ceremonies (issue 31): the browser's passkey dialog for
// signing in and for adding a passkey. Every page works without this file; its buttons stay
// hidden where the browser cannot run them.
(function () {
  "use strict";
  var supported = window.PublicKeyCredential && PublicKeyCredential.parseRequestOptionsFromJSON && PublicKeyCredential.parseCreationOptionsFromJSON;

  function post(path, body) {
    var headers = { "Content-Type": "application/json" };
    var token = document.querySelector('meta[name="csrf-token"]');
    if (token) headers["X-CSRF-Token"] = token.content;
    return fetch(path, { method: "POST", headers: headers, body: JSON.stringify(body || {}), credentials: "same-origin" }).then(function (response) {
      return response.json().catch(function () { return {}; }).then(function (json) {
        if (!response.ok) throw new Error(json.error || "The server answered " + response.status + ".");
        return json;
      });
    });
  }

  function report(message) {
    var out = document.getElementById("passkey-status");
    if (out) { out.textContent = message; out.hidden = false; }
  }

  function signIn() {
    return post("/console/sign-in/passkey/begin").then(function (begun) {
      return navigator.credentials.get({ publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(begun.publicKey) }).then(function (credential) {
        return post("/console/sign-in/passkey/finish", { ceremonyId: begun.ceremonyId, credential: credential.toJSON() });
      });
    }).then(function (done) { window.location.assign(done.location); });
  }

  function enroll() {
    return post("/console/me/passkeys/begin").then(function (begun) {
      return navigator.credentials.create({ publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(begun.publicKey) }).then(function (credential) {
        var name = document.getElementById("passkey-name");
        return post("/console/me/passkeys/finish", { ceremonyId: begun.ceremonyId, credential: credential.toJSON(), name: name ? name.value : "" });
      });
    }).then(function () { window.location.reload(); });
  }

  document.querySelectorAll("[data-passkey]").forEach(function (button) {
    if (!supported) return;
    button.hidden = false;
    button.addEventListener("click", function () {
      button.disabled = true;
      (button.dataset.passkey === "sign-in" ? signIn() : enroll()).catch(function (error) {
        report(error.message);
        button.disabled = false;
      });
    });
  });
  var unsupported = document.getElementById("passkey-unsupported");
  if (unsupported && !supported) unsupported.hidden = false;
})();
