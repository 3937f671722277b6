/// Which origins a relying party accepts in client data (WebAuthn section 13.4.9).
public struct OriginPolicy: Sendable, Hashable {
    /// Origins accepted exactly as written (`https://app.example.com`, `android:apk-key-hash:…`).
    public var exact: Set<String>
    /// Accept `https://<domain>` and `https://<sub>.<domain>` (default port only) for this domain.
    public var httpsDomainAndSubdomains: String?

    public init(exact: Set<String> = [], httpsDomainAndSubdomains: String? = nil) {
        self.exact = exact
        self.httpsDomainAndSubdomains = httpsDomainAndSubdomains
    }

    /// Exactly these origins.
    public static func exactly(_ origins: String...) -> OriginPolicy {
        OriginPolicy(exact: Set(origins))
    }

    /// `https://<rpID>` and its subdomains, plus extra exact origins (Android apps).
    public static func rpID(_ rpID: String, plus extra: Set<String> = []) -> OriginPolicy {
        OriginPolicy(exact: extra, httpsDomainAndSubdomains: rpID)
    }

    /// Whether the policy accepts `origin`.
    public func allows(_ origin: String) -> Bool {
        if exact.contains(origin) { return true }
        // RP-ID `localhost`: browsers run WebAuthn on http://localhost (a secure context, W3C
        // Secure Contexts section 3.1), on any port. Development only: no public RP-ID is it.
        if httpsDomainAndSubdomains?.lowercased() == "localhost", origin.hasPrefix("http://localhost") {
            let port = origin.dropFirst("http://localhost".count)
            return port.isEmpty || (port.first == ":" && (2...6).contains(port.count) && port.dropFirst().allSatisfy(\.isASCII) && port.dropFirst().allSatisfy(\.isNumber))
        }
        guard let domain = httpsDomainAndSubdomains?.lowercased(), origin.hasPrefix("https://") else { return false }
        let host = origin.dropFirst("https://".count).lowercased()
        // No path, port, user info or trailing dot: an origin is scheme://host[:port] only.
        guard !host.isEmpty, host.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" }) else { return false }
        return host == domain || host.hasSuffix("." + domain)
    }
}
