// libFuzzer harness for the C2SP signed-note and checkpoint parsers and the Merkle proof
// verifiers of the audit log (issue 44): what an auditor's tool, or our own `audit verify`,
// reads from a possibly hostile log server. Built by `ops/fuzz signed-note` from the
// TransparencyLog sources, swift-crypto linked from the debug build.
//
// Byte 0 picks: 0, a signed note opened with the fixed test key, then its checkpoint parsed;
// 1, an inclusion proof; 2, a consistency proof. Proof inputs are sizes and indices (8 bytes
// each) then 32-byte hashes.
// Property beyond "no crash, no hang, no leak": a parsed checkpoint's body parses to itself.

import Foundation

// RFC 8032 section 7.1, test 1's public key; the seeds are signed with its private key.
let publicKey: [UInt8] = Array(Data(base64Encoded: "11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=")!)
let name = "fuzz.example/log"

func integer(_ bytes: inout ArraySlice<UInt8>) -> Int64 {
    var value: Int64 = 0
    for _ in 0..<8 {
        value = value << 8 | Int64(bytes.first ?? 0)
        bytes = bytes.dropFirst()
    }
    return value
}

func hashes(_ bytes: ArraySlice<UInt8>) -> [[UInt8]] {
    stride(from: bytes.startIndex, to: bytes.endIndex - 31, by: 32).map { Array(bytes[$0..<$0 + 32]) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSignedNote(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard size > 0, let data else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    var rest = bytes.dropFirst()
    switch bytes[0] % 3 {
    case 0:
        let note = String(decoding: rest, as: UTF8.self)
        if let text = try? SignedNote.open(note, name: name, publicKey: publicKey), let checkpoint = try? Checkpoint(body: text) {
            guard (try? Checkpoint(body: checkpoint.body)) == checkpoint else { fatalError("a checkpoint's body does not parse to itself") }
        }
        _ = try? Checkpoint(body: note)
    case 1:
        let index = integer(&rest) % (1 << 40), size = integer(&rest) % (1 << 40)
        let all = hashes(rest)
        guard all.count >= 2 else { return 0 }
        _ = try? MerkleVerification.verifyInclusion(leafHash: all[0], index: index, size: size, path: Array(all.dropFirst(2)), root: all[1])
    default:
        let first = integer(&rest) % (1 << 40), second = integer(&rest) % (1 << 40)
        let all = hashes(rest)
        guard all.count >= 2 else { return 0 }
        _ = try? MerkleVerification.verifyConsistency(
            first: first, second: second, firstRoot: all[0], secondRoot: all[1], path: Array(all.dropFirst(2)))
    }
    return 0
}
