/// Comparison without an early exit, so timing does not reveal where two secrets differ.
public enum ConstantTime {
    public static func equal(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        var difference: UInt8 = 0
        for index in lhs.indices { difference |= lhs[index] ^ rhs[index] }
        return difference == 0
    }

    public static func equal(_ lhs: String, _ rhs: String) -> Bool {
        equal(Array(lhs.utf8), Array(rhs.utf8))
    }
}
