/// A short label for a `User-Agent` ("Safari on iOS", "Acme on Android") for the console's
/// sessions and histories (issue 43); the full string stays beside it. Recognises the
/// browsers and HTTP stacks native apps use; anything else is its first product name.
enum UserAgentLabel {
    static func short(_ userAgent: String?) -> String {
        guard let agent = userAgent?.trimmingCharacters(in: .whitespaces), !agent.isEmpty else { return "-" }
        let client = browser(agent) ?? stack(agent) ?? product(agent)
        switch (client, system(agent)) {
        case (let client?, let system?): return "\(client) on \(system)"
        case (let client?, nil): return client
        case (nil, let system?): return system
        case (nil, nil): return "unknown"
        }
    }

    /// The browser, tested most specific first: Edge, Opera and Chrome on iOS all also say
    /// Chrome or Safari.
    static func browser(_ agent: String) -> String? {
        let marks: [(String, String)] = [
            ("Edg/", "Edge"), ("EdgA/", "Edge"), ("EdgiOS/", "Edge"), ("OPR/", "Opera"), ("SamsungBrowser/", "Samsung Internet"),
            ("FxiOS/", "Firefox"), ("Firefox/", "Firefox"), ("CriOS/", "Chrome"), ("Chrome/", "Chrome"),
        ]
        if let found = marks.first(where: { agent.contains($0.0) }) { return found.1 }
        if agent.contains("Safari/") && agent.contains("Version/") { return "Safari" }
        return nil
    }

    /// A native app's HTTP stack, named by the app when it says its name first.
    static func stack(_ agent: String) -> String? {
        let app = product(agent)
        if agent.contains("CFNetwork/") { return app.map { $0 == "CFNetwork" ? "an app" : $0 } }
        if agent.hasPrefix("okhttp/") { return "an app (okhttp)" }
        if agent.hasPrefix("Dart/") { return "a Flutter app" }
        return nil
    }

    /// The operating system from the comment or the stack's tokens.
    static func system(_ agent: String) -> String? {
        let marks: [(String, String)] = [
            ("iPad", "iPadOS"), ("iPhone", "iOS"), ("iOS", "iOS"), ("Android", "Android"), ("CrOS", "ChromeOS"), ("Windows", "Windows"),
            ("Macintosh", "macOS"), ("Mac OS X", "macOS"), ("Linux", "Linux"),
        ]
        if let found = marks.first(where: { agent.contains($0.0) }) { return found.1 }
        if agent.contains("Darwin/") { return "an Apple system" }
        return nil
    }

    /// The first product token's name (`Acme/3.2 …` → `Acme`), if it looks like one.
    static func product(_ agent: String) -> String? {
        guard let slash = agent.firstIndex(of: "/") else { return nil }
        let name = agent[..<slash]
        guard !name.isEmpty, name.count <= 40, !name.contains(" "), name != "Mozilla" else { return nil }
        return String(name)
    }
}
