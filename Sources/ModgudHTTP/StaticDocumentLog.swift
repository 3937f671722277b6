import Logging
import Synchronization

/// The access log's summary of static documents served successfully: one line per window
/// (`"message":"static documents"`, with a count per path), written by the first request
/// after the window ends. Failures of these paths are logged one by one like any request.
final class StaticDocumentLog: Sendable {
    /// The documents summarized, by path.
    enum Document: String, CaseIterable, Sendable {
        case openIDConfiguration = "/.well-known/openid-configuration"
        case authorizationServer = "/.well-known/oauth-authorization-server"
        case jwks = "/.well-known/jwks.json"
        case appleAppSiteAssociation = "/.well-known/apple-app-site-association"
        case assetLinks = "/.well-known/assetlinks.json"
        case live = "/health/live"
        case ready = "/health/ready"
    }

    /// How long one summary covers.
    static let window: Duration = .seconds(10)

    private struct State {
        var counts = [Int](repeating: 0, count: Document.allCases.count)
        var windowStart = ContinuousClock.now
    }

    private let state = Mutex(State())

    /// Counts one answer; writes the summary when the window has ended.
    func count(_ document: Document, logger: Logger, now: ContinuousClock.Instant = .now) {
        let ended: [Int]? = state.withLock { state in
            state.counts[Document.allCases.firstIndex(of: document)!] += 1
            guard now - state.windowStart >= Self.window else { return nil }
            defer { state = State(counts: state.counts.map { _ in 0 }, windowStart: now) }
            return state.counts
        }
        guard let ended else { return }
        var metadata: Logger.Metadata = ["window_s": .string(String(Self.window.components.seconds))]
        for (document, count) in zip(Document.allCases, ended) where count > 0 { metadata[document.rawValue] = .string(String(count)) }
        logger.info("static documents", metadata: metadata)
    }

    /// Counts not yet written (tests).
    var pending: [Document: Int] {
        state.withLock { state in
            Dictionary(uniqueKeysWithValues: zip(Document.allCases, state.counts).filter { $0.1 > 0 })
        }
    }
}
