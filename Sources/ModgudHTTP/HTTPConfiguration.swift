/// How the HTTP adapter presents itself.
public struct HTTPConfiguration: Sendable {
    /// Scheme of the issuer URL (`https` in production; `http` for `modgud dev` on localhost).
    public var issuerScheme: String
    /// Largest request body accepted; larger ones get 413.
    public var maxBodyBytes: Int

    public init(issuerScheme: String = "https", maxBodyBytes: Int = 64 * 1024) {
        self.issuerScheme = issuerScheme
        self.maxBodyBytes = maxBodyBytes
    }
}
