import Foundation
import JWTKit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Fetches a provider's JWKS document.
public protocol JWKSFetcher: Sendable {
    func fetch(_ url: String) async throws -> [UInt8]
}

/// Each provider's signing keys (issue 48), fetched from its JWKS URL and kept until a token
/// names a key the set lacks: then fetched again, at most once per `refetchInterval` per URL
/// (a stream of tokens with made-up `kid`s cannot make the server fetch without end), and at
/// most `maxKeys` keys of at most `maxBytes` are read from one document.
public actor ProviderKeys {
    struct Entry {
        var collection: JWTKeyCollection
        var kids: Set<String>
        var fetchedAt: ContinuousClock.Instant
    }

    let fetcher: any JWKSFetcher
    let refetchInterval: Duration
    let maxKeys = 20
    let maxBytes = 256 * 1024
    private var entries: [String: Entry] = [:]
    private var inFlight: [String: Task<Entry, any Error>] = [:]
    private let clock = ContinuousClock()

    public init(fetcher: any JWKSFetcher = URLSessionJWKSFetcher(), refetchInterval: Duration = .seconds(60)) {
        self.fetcher = fetcher
        self.refetchInterval = refetchInterval
    }

    /// The keys of `url` that hold `kid`, fetching the document first when it is unknown or
    /// lacks `kid` (and was not fetched within the interval).
    func collection(_ url: String, kid: String) async throws -> JWTKeyCollection? {
        if let entry = entries[url], entry.kids.contains(kid) { return entry.collection }
        if let entry = entries[url], clock.now - entry.fetchedAt < refetchInterval { return nil }
        let entry = try await fetchOnce(url)
        return entry.kids.contains(kid) ? entry.collection : nil
    }

    /// One fetch of `url` at a time: requests that need it while it runs wait for its result
    /// (a burst of tokens with a new `kid` makes one fetch, not one each).
    private func fetchOnce(_ url: String) async throws -> Entry {
        if let running = inFlight[url] { return try await running.value }
        let task = Task { try await self.load(url) }
        inFlight[url] = task
        defer { inFlight[url] = nil }
        let entry = try await task.value
        entries[url] = entry
        return entry
    }

    private func load(_ url: String) async throws -> Entry {
        let bytes: [UInt8]
        do {
            bytes = try await fetcher.fetch(url)
        } catch let failure as FederationError {
            throw failure
        } catch {
            throw FederationError.keysUnavailable("\(url) could not be fetched: \(type(of: error))")
        }
        guard bytes.count <= maxBytes, let document = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any],
            let keys = document["keys"] as? [[String: Any]]
        else { throw FederationError.keysUnavailable("\(url) is not a JWKS document") }
        let collection = JWTKeyCollection()
        var kids: Set<String> = []
        // Signing keys with an id; keys of a type jwt-kit cannot read are passed over.
        for key in keys.prefix(maxKeys) where (key["use"] as? String ?? "sig") == "sig" {
            guard let kid = key["kid"] as? String, let data = try? JSONSerialization.data(withJSONObject: key),
                let jwk = try? JSONDecoder().decode(JWK.self, from: data), (try? await collection.add(jwk: jwk)) != nil
            else { continue }
            kids.insert(kid)
        }
        return Entry(collection: collection, kids: kids, fetchedAt: clock.now)
    }
}

/// JWKS over HTTPS with URLSession: a 10 s timeout, no cookies, no cache of its own.
public final class URLSessionJWKSFetcher: JWKSFetcher, @unchecked Sendable {
    private let session: URLSession

    public init() {
        session = URLSessionFormPoster.providerSession
    }

    public func fetch(_ url: String) async throws -> [UInt8] {
        guard let target = URL(string: url) else { throw FederationError.keysUnavailable("\(url) is not a URL") }
        var request = URLRequest(url: target, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: 10)
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        let (body, response) = try await session.data(for: request)
        guard (response as? HTTPURLResponse)?.statusCode == 200 else { throw FederationError.keysUnavailable("\(url) answered \((response as? HTTPURLResponse)?.statusCode ?? 0)") }
        return Array(body)
    }
}
