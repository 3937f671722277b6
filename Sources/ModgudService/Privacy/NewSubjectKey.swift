import Crypto
import ModgudDomain
import PQ

/// A data key made for a new subject (`PersonalDataVault.newSubject`): it seals locally, and
/// `insert` stores it in the transaction that writes the first sealed field.
public struct NewSubjectKey: Sendable {
    public let subject: String
    let key: [UInt8]
    /// The statement that stores the key (sealed under the master key's subkey).
    public let insert: PQQuery

    /// `text` sealed under this subject's key.
    public func seal(_ text: String) throws -> SealedText {
        let box = try AES.GCM.seal(Array(text.utf8), using: SymmetricKey(data: key), authenticating: PersonalDataVault.aad(subject))
        return SealedText(box: Array(box.combined!), subject: subject)
    }

    /// An optional field sealed (nil stays nil).
    public func seal(_ text: String?) throws -> PersonalText? {
        try text.map { .sealed(try seal($0)) }
    }
}
