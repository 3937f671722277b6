import EventSourcing
import Foundation
import Hummingbird
import ModgudDomain
import ModgudService

extension SharedSignalsController {
    /// The authenticated receiver of a request.
    struct Receiver {
        var realm: String
        var issuer: String
        var clientID: String
    }

    /// The realm and the receiver client: a live client-credentials token (401 otherwise) with
    /// `ssf.manage`, or `ssf.read` for reading (403 `insufficient_scope`, RFC 6750 section 3.1).
    func authorized(_ request: Request, write: Bool) async throws -> Receiver {
        let (realm, issuer) = try await parsing.realm(request)
        let service = try await resource.service(request, realm: realm.realmID, issuer: issuer)
        guard service.scopes.contains("ssf.manage") || (!write && service.scopes.contains("ssf.read")) else {
            throw RequestParsing.Failure.response(
                ProtectedResource.challenge("insufficient_scope", scheme: service.scheme, status: .forbidden, description: "This needs the ssf.manage scope."))
        }
        return Receiver(realm: realm.realmID, issuer: issuer, clientID: service.clientID)
    }

    /// The receiver's stream, which `streamID` must name (404 otherwise, section 8.1.1).
    @discardableResult
    func requireStream(_ streamID: String?, _ receiver: Receiver) async throws -> SignalStream.State {
        guard let streamID, let state = try await streams.read(realm: receiver.realm, clientID: receiver.clientID), state.streamID == streamID else {
            throw RequestParsing.Failure.response(Self.notFound())
        }
        return state
    }

    func metadata(_ context: ModgudRequestContext, _ receiver: Receiver) -> EventMetadata {
        EventMetadata(correlationID: context.id, actor: "client:\(receiver.clientID)", clientIP: context.peerAddress)
    }

    func stream(_ state: SignalStream.State, issuer: String, status: HTTPResponse.Status = .ok) throws -> Response {
        guard let body = SharedSignalsBodies.Stream(state, issuer: issuer) else { return Self.notFound() }
        return Self.noStore(OAuthResponses.json(body, status: status))
    }

    /// The service's request from the body (400 for an unknown method or format).
    static func request(_ body: SharedSignalsBodies.StreamRequest) throws -> SignalStreamRequest {
        var request = SignalStreamRequest(eventsRequested: body.events_requested, description: body.description)
        if let delivery = body.delivery {
            guard let method = SignalDeliveryMethod(rawValue: delivery.method) else {
                throw RequestParsing.Failure.response(Problem.response("SSF.UnsupportedDelivery", status: 400, detail: "delivery.method is urn:ietf:rfc:8935 or urn:ietf:rfc:8936."))
            }
            request.method = method
            request.endpointURL = method == .push ? delivery.endpoint_url : nil
            request.authorizationHeader = delivery.authorization_header
        }
        if let format = body.format {
            guard let parsed = SignalSubjectFormat(rawValue: format) else {
                throw RequestParsing.Failure.response(Problem.response("SSF.UnsupportedFormat", status: 400, detail: "format is iss_sub or email."))
            }
            request.format = parsed
        }
        return request
    }

    static func notFound() -> Response {
        Problem.response("SSF.StreamNotFound", status: 404, detail: "This receiver has no stream with that stream_id.")
    }

    static func noContent() -> Response {
        noStore(Response(status: .noContent))
    }

    static func noStore(_ response: Response) -> Response {
        var response = response
        response.headers[.cacheControl] = "no-store"
        return response
    }

    /// Parsing responses, refusals of the stream aggregate by their meaning, anything else a 500.
    func respond(_ context: ModgudRequestContext, _ body: () async throws -> Response) async -> Response {
        do {
            return try await body()
        } catch RequestParsing.Failure.response(let response) {
            return response
        } catch let refusal as ServiceRefusal {
            return refusal.kind == .notFound ? Self.notFound() : refusal.problem
        } catch {
            return ServerFailure.problem(error, context: context, endpoint: "ssf")
        }
    }
}
