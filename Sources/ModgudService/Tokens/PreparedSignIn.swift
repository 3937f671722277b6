import EventSourcing
import EventStorePostgres
import Foundation
import ModgudDomain

/// A minted sign-in whose token family is not written yet (`TokenService.prepareSignIn`).
public struct PreparedSignIn: Sendable {
    public let stream: StreamRef
    public var started: TokenFamilyStarted
    public let response: TokenResponse

    /// The family's first event, for a multi-stream append (the family must be new).
    public func write() throws -> StreamWrite {
        StreamWrite(stream: stream, expected: .noStream, events: [try TokenFamilyEvent.started(started).newEvent()])
    }
}
