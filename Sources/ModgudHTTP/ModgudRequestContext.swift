import Hummingbird

/// The per-request context: request facts only (docs/architecture.md, "House habits").
public struct ModgudRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The peer's IP address (the proxy's, behind one; see `SourceAddress`).
    public let peerAddress: String?
    /// The request's `User-Agent`, set by `RequestObservationMiddleware`.
    public internal(set) var userAgent: String?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        peerAddress = source.channel.remoteAddress?.ipAddress
    }

    /// Bodies of OAuth endpoints are small forms.
    public var maxUploadSize: Int { 64 * 1024 }
}
