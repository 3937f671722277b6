// libFuzzer harness for the CBOR decoder (issue 44). Built by `ops/fuzz cbor` into one module
// with Sources/CBOR, under -sanitize=fuzzer,address: no package, no test runner.
//
// Properties checked on every input, beyond "no crash, no hang, no leak":
// - a decoded item re-encodes canonically, and the canonical bytes decode and re-encode to
//   themselves (the encoder and the decoder agree);
// - `decodePrefix` never claims more bytes than it was given, and agrees with `decode` when
//   the prefix is the whole input.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCBOR(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = size == 0 ? [] : Array(UnsafeBufferPointer(start: data, count: size))
    let decoder = CBORDecoder()
    let whole = try? decoder.decode(bytes)
    if let item = whole {
        let canonical = CBOREncoder.encode(item)
        guard let again = try? decoder.decode(canonical) else { fatalError("canonical bytes of a decoded item do not decode") }
        guard CBOREncoder.encode(again) == canonical else { fatalError("canonical encoding is not a fixed point") }
    }
    if let (item, consumed) = try? decoder.decodePrefix(bytes) {
        guard consumed > 0, consumed <= bytes.count else { fatalError("decodePrefix consumed \(consumed) of \(bytes.count)") }
        if consumed == bytes.count, let whole { guard CBOREncoder.encode(whole) == CBOREncoder.encode(item) else { fatalError("prefix and whole disagree") } }
        if consumed == bytes.count, whole == nil { fatalError("decodePrefix took every byte but decode refused") }
    }
    return 0
}
