/// A failure reported to the operator as one line, without a usage text.
struct CommandError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
