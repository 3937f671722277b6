/// The approval page's script (`DeviceApprovalPage`), served from `/device/approve.js` so the
/// page's policy allows scripts from this host only. It calls the JSON endpoints an app calls:
/// verify the typed code, show what asks, then approve with `navigator.credentials.get` (user
/// verification required) or deny. It writes text with `textContent` only.
enum DeviceApprovalScript {
    static let source = #"""
        "use strict";
        (function () {
          const $ = (id) => document.getElementById(id);
          const b64url = {
            decode: (text) => Uint8Array.from(atob(text.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0)),
            encode: (buffer) => btoa(String.fromCharCode(...new Uint8Array(buffer))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, ""),
          };
          let pending = null;

          async function post(path, body) {
            const response = await fetch(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
            const json = await response.json().catch(() => ({}));
            if (!response.ok) throw new Error(json.detail || json.error_description || "Something went wrong: try again.");
            return json;
          }

          function say(text) { $("result").textContent = text; }

          async function verify() {
            say("");
            try {
              pending = await post("/connect/device/verify", { user_code: $("user-code").value });
              $("client").textContent = pending.client_name || pending.client_id;
              $("device").textContent = pending.device_name || "(the device did not say)";
              $("network").textContent = pending.network || "(unknown)";
              $("scope").textContent = pending.scope || "(sign-in only)";
              $("enter").hidden = true;
              $("confirm").hidden = false;
            } catch (error) { say(error.message); }
          }

          async function approve() {
            const options = pending.options;
            const publicKey = Object.assign({}, options, { challenge: b64url.decode(options.challenge), userVerification: "required" });
            if (options.allowCredentials) publicKey.allowCredentials = options.allowCredentials.map((c) => Object.assign({}, c, { id: b64url.decode(c.id) }));
            try {
              const credential = await navigator.credentials.get({ publicKey });
              const r = credential.response;
              const assertion = {
                id: credential.id, rawId: b64url.encode(credential.rawId), type: credential.type,
                response: {
                  clientDataJSON: b64url.encode(r.clientDataJSON), authenticatorData: b64url.encode(r.authenticatorData),
                  signature: b64url.encode(r.signature), userHandle: r.userHandle ? b64url.encode(r.userHandle) : null,
                },
              };
              await post("/connect/device/approve", { authorization_id: pending.authorization_id, ceremonyId: pending.ceremonyId, assertion });
              $("confirm").hidden = true;
              say("Approved. Your device is signing in now.");
            } catch (error) { say(error.message); }
          }

          async function deny() {
            try {
              await post("/connect/device/deny", { authorization_id: pending.authorization_id, ceremonyId: pending.ceremonyId });
              $("confirm").hidden = true;
              say("Denied. The device was not signed in.");
            } catch (error) { say(error.message); }
          }

          document.addEventListener("DOMContentLoaded", () => {
            $("continue").addEventListener("click", verify);
            $("approve").addEventListener("click", approve);
            $("deny").addEventListener("click", deny);
          });
        })();
        """#
}
