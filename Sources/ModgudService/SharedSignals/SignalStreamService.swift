import EventSourcing
import Foundation
import JWTKit
import ModgudDomain
import PQ

/// What a receiver asks for when it creates, updates or replaces its stream (SSF 1.0 section
/// 8.1.1): the receiver-supplied properties. Nil means "not in the request".
public struct SignalStreamRequest: Sendable {
    public var method: SignalDeliveryMethod?
    public var endpointURL: String?
    public var authorizationHeader: String?
    public var eventsRequested: [String]?
    public var description: String?
    public var format: SignalSubjectFormat?

    public init(
        method: SignalDeliveryMethod? = nil, endpointURL: String? = nil, authorizationHeader: String? = nil, eventsRequested: [String]? = nil,
        description: String? = nil, format: SignalSubjectFormat? = nil
    ) {
        self.method = method
        self.endpointURL = endpointURL
        self.authorizationHeader = authorizationHeader
        self.eventsRequested = eventsRequested
        self.description = description
        self.format = format
    }
}

/// A subject a receiver adds to or removes from its stream (SSF 1.0 section 8.1.3), resolved
/// to one of the realm's users.
public enum SignalSubject: Sendable, Equatable {
    case issSub(iss: String, sub: String)
    case email(String)
    case opaque(String)
}

/// The Stream Management API of the transmitter (SSF 1.0 section 8), for receivers
/// authenticated as clients (the HTTP layer checks the token and its scope). Every change is an
/// event on the receiver's stream; the transmitter applies it to `ssf_streams` in log order.
public struct SignalStreamService: Sendable {
    let pool: PQPool
    let streams: AggregateRegistry<SignalStream>
    let users: AggregateRegistry<User>
    let vault: PersonalDataVault?
    let sealer: KeySealer?
    let issuer: SignalSETIssuer
    let wakeups: SignalWakeups
    let now: @Sendable () -> Date

    /// The receiver's stream, if it has one.
    public func read(realm: String, clientID: String) async throws -> SignalStream.State? {
        return try await ServiceRefusal.translating {
            let state = try await actor(realm, clientID).current().state
            return state.exists ? state : nil
        }
    }

    /// Creates the receiver's stream (section 8.1.1.1); without a delivery, it polls.
    public func create(realm: String, clientID: String, issuer: String, request: SignalStreamRequest, metadata: EventMetadata) async throws
        -> SignalStream.State
    {
        return try await ServiceRefusal.translating {
            let streamID = UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")  // 32 hex digits (RFC 3986 unreserved)
            let configuration = try configuration(request, realm: realm, streamID: streamID)
            return try await actor(realm, clientID).execute(
                .create(streamID: streamID, clientID: clientID, issuer: issuer, configuration: configuration), now: now(), metadata: metadata
            ).state
        }
    }

    /// Updates (section 8.1.1.3: only what the request holds) or replaces (8.1.1.4: what it
    /// lacks is removed) the receiver-supplied configuration.
    public func configure(realm: String, clientID: String, request: SignalStreamRequest, replace: Bool, metadata: EventMetadata) async throws
        -> SignalStream.State
    {
        return try await ServiceRefusal.translating {
            let stream = await actor(realm, clientID)
            let state = try await stream.current().state
            guard state.exists, let current = state.configuration, let streamID = state.streamID else {
                throw DomainError.notFound("SignalStream.NotFound", "No such stream.")
            }
            var merged = request
            if !replace {
                merged.method = request.method ?? current.method
                merged.endpointURL = request.endpointURL ?? (request.method == nil || request.method == current.method ? current.endpointURL : nil)
                merged.eventsRequested = request.eventsRequested ?? current.eventsRequested
                merged.description = request.description ?? current.description
                merged.format = request.format ?? current.format
            }
            var configuration = try configuration(merged, realm: realm, streamID: streamID)
            if !replace, request.authorizationHeader == nil, configuration.method == current.method, configuration.endpointURL == current.endpointURL {
                configuration.sealedAuthorization = current.sealedAuthorization  // the receiver's credential stays unless it sends another
            }
            return try await stream.execute(.configure(configuration), now: now(), metadata: metadata).state
        }
    }

    public func delete(realm: String, clientID: String, metadata: EventMetadata) async throws {
        try await ServiceRefusal.translating {
            _ = try await actor(realm, clientID).execute(.delete, now: now(), metadata: metadata)
        }
    }

    /// Section 8.1.2.2, asked by the receiver; or by an operator (`byOperator`), which the
    /// receiver then hears of with a stream-updated SET (section 8.1.5).
    public func setStatus(
        realm: String, clientID: String, status: SignalStreamStatus, reason: String?, byOperator: Bool = false, metadata: EventMetadata
    ) async throws -> SignalStream.State {
        return try await ServiceRefusal.translating {
            let by = byOperator ? SignalStream.operatorActor : "receiver"
            return try await actor(realm, clientID).execute(.setStatus(status, reason: reason, by: by), now: now(), metadata: metadata).state
        }
    }

    /// Sections 8.1.3.2 and 8.1.3.3. An unknown subject changes nothing and says nothing (the
    /// section 9.1 probing concern): the answer is the same as for a known one.
    public func subject(realm: String, clientID: String, _ subject: SignalSubject, add: Bool, metadata: EventMetadata) async throws {
        try await ServiceRefusal.translating {
            let stream = await actor(realm, clientID)
            guard let state = try await read(realm: realm, clientID: clientID) else { throw DomainError.notFound("SignalStream.NotFound", "No such stream.") }
            guard let userID = try await resolve(subject, realm: realm, issuer: state.issuer) else { return }
            _ = try await stream.execute(add ? .addSubject(userID) : .removeSubject(userID), now: now(), metadata: metadata)
        }
    }

    /// Section 8.1.4.2: a verification SET, sent through the log like every other.
    public func verify(realm: String, clientID: String, state: String?, metadata: EventMetadata) async throws {
        try await ServiceRefusal.translating {
            _ = try await actor(realm, clientID).execute(.requestVerification(state: state), now: now(), metadata: metadata)
        }
    }

    private func actor(_ realm: String, _ clientID: String) async -> AggregateActor<SignalStream> {
        await streams.actor(for: StreamNames.signalStream(realm: realm, clientID: clientID))
    }

    private func configuration(_ request: SignalStreamRequest, realm: String, streamID: String) throws -> SignalStreamConfiguration {
        let method = request.method ?? .poll
        let sealed = try request.authorizationHeader.map { header in
            guard method == .push, header.count <= 4096, !header.contains(where: { $0.isNewline }) else {
                throw DomainError("SignalStream.InvalidAuthorization", "authorization_header is for push streams: one line of at most 4096 characters.")
            }
            return try SignalSecrets.sealAuthorization(header, sealer: sealer, realm: realm, streamID: streamID)
        }
        let configuration = SignalStreamConfiguration(
            method: method, endpointURL: request.endpointURL, sealedAuthorization: sealed,
            eventsRequested: request.eventsRequested, description: request.description, format: request.format ?? .issSub)
        try configuration.validate()
        return configuration
    }

    /// The user a subject names in this realm, or nil.
    func resolve(_ subject: SignalSubject, realm: String, issuer: String?) async throws -> UUID? {
        let candidate: UUID?
        switch subject {
        case .issSub(let iss, let sub):
            guard iss == issuer else { return nil }
            candidate = UUID(uuidString: sub)
        case .opaque(let id):
            candidate = UUID(uuidString: id)
        case .email(let text):
            guard let email = EmailAddress(text), let vault else { return nil }
            return try await UsersTable.userID(realm: realm, email: email, index: vault.blindIndex(email.value, realm: realm), pool: pool)
        }
        guard let candidate else { return nil }
        let user = try await users.actor(for: StreamNames.user(realm: realm, userID: candidate)).current().state
        return user.exists ? candidate : nil
    }
}
