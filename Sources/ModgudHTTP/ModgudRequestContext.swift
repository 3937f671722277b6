import Hummingbird

/// The per-request context: request facts only (STYLE.md, Hummingbird habit).
public struct ModgudRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
    }

    /// Bodies of OAuth endpoints are small forms.
    public var maxUploadSize: Int { 64 * 1024 }
}
