import EventSourcing
import Foundation
import Hummingbird
import ModgudDomain
import ModgudService

/// The Shared Signals transmitter's HTTP side (issue 30): its metadata (OpenID SSF 1.0 section
/// 7), the Stream Management API (section 8) and the poll endpoint (RFC 8936). Receivers are
/// clients of the realm authenticated by a `client_credentials` access token (Bearer or DPoP)
/// with `ssf.manage` (`ssf.read` suffices for reading), as the CAEP Interoperability Profile
/// section 2.7.2 names them. One stream per receiver client.
struct SharedSignalsController: Sendable {
    let streams: SignalStreamService
    let resource: ProtectedResource
    let parsing: RequestParsing
    /// How long an empty poll without `returnImmediately` waits (RFC 8936 section 2.4.3).
    let longPoll: Duration
    /// A draining instance answers waiting polls at once.
    let readiness: ReadinessProbe

    typealias Bodies = SharedSignalsBodies

    func register(on router: Router<ModgudRequestContext>) {
        router.get("/.well-known/ssf-configuration", use: metadata)
        router.post("/ssf/stream", use: create)
        router.get("/ssf/stream", use: read)
        router.patch("/ssf/stream", use: update)
        router.put("/ssf/stream", use: replace)
        router.delete("/ssf/stream", use: delete)
        router.get("/ssf/status", use: status)
        router.post("/ssf/status", use: setStatus)
        router.post("/ssf/subjects/add", use: addSubject)
        router.post("/ssf/subjects/remove", use: removeSubject)
        router.post("/ssf/verify", use: verify)
        router.post("/ssf/poll/:stream", use: poll)
    }

    /// GET /.well-known/ssf-configuration (section 7.2).
    func metadata(_ request: Request, context: ModgudRequestContext) async -> Response {
        await respond(context) {
            let (_, issuer) = try await parsing.realm(request)
            return OAuthResponses.json(Bodies.Metadata(issuer: issuer))
        }
    }

    /// POST /ssf/stream: 201 with the configuration; 409 when the receiver has one.
    func create(_ request: Request, context: ModgudRequestContext) async -> Response {
        await respond(context) {
            let receiver = try await authorized(request, write: true)
            let body = try await parsing.json(Bodies.StreamRequest.self, request, allowed: Bodies.StreamRequest.members)
            let state = try await streams.create(
                realm: receiver.realm, clientID: receiver.clientID, issuer: receiver.issuer, request: try Self.request(body),
                metadata: metadata(context, receiver))
            return try stream(state, issuer: receiver.issuer, status: .created)
        }
    }

    /// GET /ssf/stream[?stream_id=]: the stream, or the list of the receiver's streams.
    func read(_ request: Request, context: ModgudRequestContext) async -> Response {
        await respond(context) {
            let receiver = try await authorized(request, write: false)
            let state = try await streams.read(realm: receiver.realm, clientID: receiver.clientID)
            guard let asked = request.uri.queryParameters.get("stream_id") else {
                return OAuthResponses.json([state].compactMap { $0.flatMap { Bodies.Stream($0, issuer: receiver.issuer) } })
            }
            guard let state, state.streamID == asked else { return Self.notFound() }
            return try stream(state, issuer: receiver.issuer)
        }
    }

    /// PATCH /ssf/stream (section 8.1.1.3).
    func update(_ request: Request, context: ModgudRequestContext) async -> Response {
        await configure(request, context: context, replace: false)
    }

    /// PUT /ssf/stream (section 8.1.1.4).
    func replace(_ request: Request, context: ModgudRequestContext) async -> Response {
        await configure(request, context: context, replace: true)
    }

    private func configure(_ request: Request, context: ModgudRequestContext, replace: Bool) async -> Response {
        await respond(context) {
            let receiver = try await authorized(request, write: true)
            let body = try await parsing.json(Bodies.StreamRequest.self, request, allowed: Bodies.StreamRequest.members)
            guard let asked = body.stream_id else { return Problem.response("SSF.StreamIDRequired", status: 400, detail: "stream_id is required.") }
            try await requireStream(asked, receiver)
            let state = try await streams.configure(
                realm: receiver.realm, clientID: receiver.clientID, request: try Self.request(body), replace: replace, metadata: metadata(context, receiver))
            return try stream(state, issuer: receiver.issuer)
        }
    }

    /// DELETE /ssf/stream?stream_id= (section 8.1.1.5): 204.
    func delete(_ request: Request, context: ModgudRequestContext) async -> Response {
        await respond(context) {
            let receiver = try await authorized(request, write: true)
            try await requireStream(request.uri.queryParameters.get("stream_id"), receiver)
            try await streams.delete(realm: receiver.realm, clientID: receiver.clientID, metadata: metadata(context, receiver))
            return Self.noContent()
        }
    }

    /// GET /ssf/status?stream_id= (section 8.1.2.1).
    func status(_ request: Request, context: ModgudRequestContext) async -> Response {
        await respond(context) {
            let receiver = try await authorized(request, write: false)
            let state = try await requireStream(request.uri.queryParameters.get("stream_id"), receiver)
            return OAuthResponses.json(Bodies.Status(stream_id: state.streamID ?? "", status: state.status.rawValue, reason: state.reason))
        }
    }

    /// POST /ssf/status (section 8.1.2.2): `enabled`, `paused` or `disabled`, with a reason.
    func setStatus(_ request: Request, context: ModgudRequestContext) async -> Response {
        await respond(context) {
            let receiver = try await authorized(request, write: true)
            let body = try await parsing.json(Bodies.Status.self, request, allowed: ["stream_id", "status", "reason"])
            guard let status = SignalStreamStatus(rawValue: body.status) else {
                return Problem.response("SSF.InvalidStatus", status: 400, detail: "status is enabled, paused or disabled.")
            }
            try await requireStream(body.stream_id, receiver)
            let state = try await streams.setStatus(
                realm: receiver.realm, clientID: receiver.clientID, status: status, reason: body.reason, metadata: metadata(context, receiver))
            return OAuthResponses.json(Bodies.Status(stream_id: body.stream_id, status: state.status.rawValue, reason: state.reason))
        }
    }

    /// POST /ssf/subjects/add (section 8.1.3.2): 200, for an unknown subject too.
    func addSubject(_ request: Request, context: ModgudRequestContext) async -> Response {
        await subject(request, context: context, add: true)
    }

    /// POST /ssf/subjects/remove (section 8.1.3.3): 204, for an unknown subject too.
    func removeSubject(_ request: Request, context: ModgudRequestContext) async -> Response {
        await subject(request, context: context, add: false)
    }

    private func subject(_ request: Request, context: ModgudRequestContext, add: Bool) async -> Response {
        await respond(context) {
            let receiver = try await authorized(request, write: true)
            let body = try await parsing.json(Bodies.SubjectRequest.self, request, allowed: ["stream_id", "subject", "verified"])
            let subject: SignalSubject?
            do {
                subject = try Bodies.subject(body.subject)
            } catch let failure as StrictJSON.Failure {
                guard case .invalid(let detail) = failure else { return Problem.response("SSF.InvalidSubject", status: 400, detail: "Not a subject identifier.") }
                return Problem.response("SSF.InvalidSubject", status: 400, detail: detail)
            }
            try await requireStream(body.stream_id, receiver)
            if let subject {
                try await streams.subject(realm: receiver.realm, clientID: receiver.clientID, subject, add: add, metadata: metadata(context, receiver))
            }
            return add ? Self.noStore(Response(status: .ok)) : Self.noContent()
        }
    }

    /// POST /ssf/verify (section 8.1.4.2): 204; the verification SET follows through the log.
    func verify(_ request: Request, context: ModgudRequestContext) async -> Response {
        await respond(context) {
            let receiver = try await authorized(request, write: true)
            let body = try await parsing.json(Bodies.VerifyRequest.self, request, allowed: ["stream_id", "state"])
            try await requireStream(body.stream_id, receiver)
            try await streams.verify(realm: receiver.realm, clientID: receiver.clientID, state: body.state, metadata: metadata(context, receiver))
            return Self.noContent()
        }
    }

    /// POST /ssf/poll/{stream_id} (RFC 8936 section 2.4): acknowledge, report errors, receive.
    func poll(_ request: Request, context: ModgudRequestContext) async -> Response {
        await respond(context) {
            let receiver = try await authorized(request, write: true)
            try await requireStream(context.parameters.get("stream"), receiver)
            let body = try await parsing.json(Bodies.PollRequest.self, request, allowed: ["maxEvents", "returnImmediately", "ack", "setErrs"])
            guard (body.ack?.count ?? 0) <= 1000, (body.setErrs?.count ?? 0) <= 1000 else {
                return Problem.response("SSF.TooMany", status: 400, detail: "At most 1000 acknowledgements and 1000 errors per poll.")
            }
            let result = try await streams.poll(
                realm: receiver.realm, clientID: receiver.clientID, acknowledgements: body.ack ?? [],
                errors: (body.setErrs ?? [:]).mapValues { "\($0.err): \($0.description ?? "")" }, maxEvents: body.maxEvents,
                returnImmediately: body.returnImmediately ?? false, wait: longPoll, draining: { [readiness] in readiness.isDraining })
            var sets: [String: String] = [:]
            for (jti, token) in result.sets { sets[jti] = token }
            return Self.noStore(OAuthResponses.json(Bodies.PollResponse(sets: sets, moreAvailable: result.moreAvailable)))
        }
    }
}
