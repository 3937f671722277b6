import Foundation
import Hummingbird
import ModgudService

/// The audit log routes of the admin API (issue 28; docs/operations/audit-log.md). The
/// checkpoint is a C2SP tlog-checkpoint in a signed note; the proofs are RFC 9162's (section
/// 2.1.3 inclusion, 2.1.4 consistency) in the JSON of RFC 6962's `get-proof-by-hash` and
/// `get-sth-consistency` (`leaf_index`, `audit_path`, `consistency`, hashes in base64), so
/// Certificate Transparency tooling reads them.
extension AdminController {
    func registerAuditLog(on api: RouterGroup<ModgudRequestContext>) {
        api.get("realms/:realm/audit/checkpoint") { request, context in
            await self.handle(request, context) { realm in
                guard let latest = try await self.admin.audit.checkpoint(realm: realm) else {
                    throw AdminProblem("AuditLog.NotFound", "The realm's log has no checkpoint yet.", status: 404)
                }
                return OAuthResponses.json(
                    CheckpointBody(
                        checkpoint: latest.note, origin: latest.checkpoint.origin, tree_size: latest.checkpoint.size,
                        root_hash: Data(latest.checkpoint.root).base64EncodedString(), timestamp: latest.checkpoint.timestamp,
                        verifier_key: latest.verifierKey, public_key: Data(latest.publicKey).base64EncodedString()))
            }
        }
        api.get("realms/:realm/audit/proof/inclusion") { request, context in
            await self.handle(request, context) { realm in
                let position = try Self.number(request, "position", required: true)!
                let proof = try await self.admin.audit.inclusionProof(realm: realm, position: position, size: try Self.number(request, "size"))
                return OAuthResponses.json(
                    InclusionBody(
                        position: position, leaf_index: proof.leafIndex, tree_size: proof.size, leaf_hash: Data(proof.leafHash).base64EncodedString(),
                        audit_path: proof.path.map { Data($0).base64EncodedString() }))
            }
        }
        api.get("realms/:realm/audit/proof/consistency") { request, context in
            await self.handle(request, context) { realm in
                let first = try Self.number(request, "from", required: true)!
                let second = try Self.number(request, "to", required: true)!
                let proof = try await self.admin.audit.consistencyProof(realm: realm, first: first, second: second)
                return OAuthResponses.json(
                    ConsistencyBody(first: first, second: second, consistency: proof.map { Data($0).base64EncodedString() }))
            }
        }
    }

    /// A whole-number query parameter, or 400 `Request.InvalidParameter`.
    private static func number(_ request: Request, _ name: String, required: Bool = false) throws -> Int64? {
        guard let text = request.uri.queryParameters.get(name) else {
            if required { throw AdminProblem("Request.MissingParameter", "\(name) is required.") }
            return nil
        }
        guard let value = Int64(String(text)), value >= 0 else {
            throw AdminProblem("Request.InvalidParameter", "\(name) must be a whole number.")
        }
        return value
    }

    struct CheckpointBody: Encodable {
        var checkpoint: String
        var origin: String
        var tree_size: Int64
        var root_hash: String
        var timestamp: Int64
        var verifier_key: String
        var public_key: String
    }

    struct InclusionBody: Encodable {
        var position: Int64
        var leaf_index: Int64
        var tree_size: Int64
        var leaf_hash: String
        var audit_path: [String]
    }

    struct ConsistencyBody: Encodable {
        var first: Int64
        var second: Int64
        var consistency: [String]
    }
}
