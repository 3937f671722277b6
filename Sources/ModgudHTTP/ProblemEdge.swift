import EventSourcing
import Foundation
import Hummingbird
import ModgudService

/// The edge of Modgud's own JSON endpoints (issue 42): where their failures become answers,
/// attached by each route group that answers problem documents (the account API, the passkey
/// endpoints, My Account), so no controller borrows another's. Auth0's paths answer Auth0's
/// OAuth shapes (`Auth0ErrorResponses`), the token endpoint RFC 6749's (`OAuthResponses`).
enum ProblemEdge {
    /// Maps the shared failures: parsing responses, rate limits, an invalid address, and
    /// anything else as a 500 (or a 503 while the database is away) that names nothing (the
    /// error goes to the log).
    static func respond(_ context: ModgudRequestContext, _ body: () async throws -> Response) async -> Response {
        do {
            return try await body()
        } catch RequestParsing.Failure.response(let response) {
            return response
        } catch let limited as RateLimited {
            return OAuthResponses.rateLimited(limited)
        } catch is EmailSignInService.InvalidEmailAddress {
            return Problem.response("Email.Invalid", status: 400, detail: "The email address is not valid.")
        } catch {
            return ServerFailure.problem(error, context: context, endpoint: "account")
        }
    }

    /// As `respond`, with a service's refusal answered as its problem document.
    static func respondWithProblems(_ context: ModgudRequestContext, _ body: () async throws -> Response) async -> Response {
        await respond(context) {
            do {
                return try await body()
            } catch let refusal as ServiceRefusal {
                return refusal.problem
            }
        }
    }

    /// 400 `NativeGrants.Disabled`: the realm's switch is off (seed 001's error table).
    static func nativeGrantsDisabled() -> Response {
        Problem.response("NativeGrants.Disabled", status: 400, detail: "Native passwordless grants are not enabled for this realm.")
    }
}

extension ModgudRequestContext {
    /// The metadata of the events this request writes: its correlation id, the acting user
    /// (`user:<id>`) when one is signed in, and the peer address.
    func eventMetadata(actor: UUID? = nil) -> EventMetadata {
        EventMetadata(correlationID: id, actor: actor.map { "user:\($0.uuidString.lowercased())" }, clientIP: peerAddress, userAgent: userAgent)
    }
}
