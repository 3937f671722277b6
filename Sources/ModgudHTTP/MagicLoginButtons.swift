import Foundation
import ModgudService

/// The buttons of `/magic-login` that hand the link to an installed app (issue 65, item 6).
/// None is a link to the page's own host: a universal link to the domain of the page being
/// shown stays in Safari (Apple, "Supporting universal links in your app": "If the user taps
/// a universal link to a URL in the same domain as the current webpage, the system opens the
/// link in Safari"), so such a button only reloads the page. Instead:
///
/// - Android: Chrome's `intent:` URL (developer.chrome.com/docs/android/intents, "Android
///   Intents with Chrome"): `intent://<host>/magic-login?…#Intent;scheme=https;package=<app>;
///   S.browser_fallback_url=<this page, encoded>;end`. Chrome starts the named app with the
///   link as its data, or, without the app, comes back here.
/// - iOS: the app's custom URL scheme (developer.apple.com/documentation/xcode/
///   defining-a-custom-url-scheme-for-your-app): `<scheme>://magic-login?userId=…&token=…`.
///
/// Pure functions; the page escapes what they return.
enum MagicLoginButtons {
    /// One button: what it says and where it goes (not yet HTML-escaped).
    struct Button: Equatable, Sendable {
        let label: String
        let href: String
    }

    enum Platform: Equatable, Sendable {
        case iOS, android
    }

    /// The phone the browser runs on, told by its User-Agent; nil for anything else (a laptop,
    /// an iPad asking for desktop sites).
    static func platform(userAgent: String?) -> Platform? {
        guard let userAgent else { return nil }
        if ["iPhone", "iPad", "iPod"].contains(where: userAgent.contains) { return .iOS }
        return userAgent.contains("Android") ? .android : nil
    }

    /// The buttons for `link` (the magic link as mailed: `<base>/magic-login?userId=…&token=…`)
    /// and the apps that open the realm's magic links. A phone gets its own platform's
    /// buttons, labelled "Open in the app"; anything else gets every button, labelled by
    /// platform. Empty when no app is configured or `link` is not an http(s) URL.
    static func buttons(link: String, apps: AppAssociations.HostApps, userAgent: String?) -> [Button] {
        let schemes = Set(apps.linkSchemes).sorted(), packages = Set(apps.linkAndroid.map(\.packageName)).sorted()
        let platform = platform(userAgent: userAgent)
        var buttons: [Button] = []
        if platform != .android {
            buttons += schemes.compactMap { scheme in
                schemeURL(link: link, scheme: scheme).map {
                    Button(label: label(platform == .iOS ? "the app" : "the iPhone app", id: scheme, among: schemes.count), href: $0)
                }
            }
        }
        if platform != .iOS {
            buttons += packages.compactMap { package in
                intentURL(link: link, package: package).map {
                    Button(label: label(platform == .android ? "the app" : "the Android app", id: package, among: packages.count), href: $0)
                }
            }
        }
        return buttons
    }

    private static func label(_ app: String, id: String, among count: Int) -> String {
        "Open in \(app)" + (count > 1 ? " (\(id))" : "")
    }

    /// Chrome's intent URL for `link`, opening `package` and falling back to `link` itself.
    static func intentURL(link: String, package: String) -> String? {
        guard let parts = split(link) else { return nil }
        return "intent://\(parts.rest)#Intent;scheme=\(parts.scheme);package=\(package);S.browser_fallback_url=\(encoded(link));end"
    }

    /// `<scheme>://magic-login?userId=…&token=…`: the link's query under the app's scheme.
    static func schemeURL(link: String, scheme: String) -> String? {
        guard let components = URLComponents(string: link), let query = components.percentEncodedQuery, split(link) != nil else { return nil }
        return "\(scheme)://magic-login?\(query)"
    }

    /// The link's scheme (http or https) and what follows `scheme://`, when its host is a
    /// host name or address and its port a number: nothing else reaches an intent URL.
    private static func split(_ link: String) -> (scheme: String, rest: Substring)? {
        guard let components = URLComponents(string: link), let scheme = components.scheme?.lowercased(), ["http", "https"].contains(scheme),
            let host = components.host, !host.isEmpty, components.fragment == nil,
            host.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == ":") })
        else { return nil }
        return (scheme, link.dropFirst(scheme.count + 3))
    }

    /// RFC 3986 unreserved characters only: the fallback URL is one value inside the intent's
    /// `;`-separated fragment.
    private static func encoded(_ text: String) -> String {
        let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        return text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ""
    }
}
