#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `timestamptz` text conversion in UTC with microsecond precision.
///
/// Every connection sets `TimeZone` to UTC and `DateStyle` to ISO, so the server writes
/// `2026-11-21 22:36:09.123456+00`. Conversion is done by hand (civil-date arithmetic)
/// so that the client does not need Foundation's formatters.
public enum PQTimestamp {
    /// `YYYY-MM-DD HH:MM:SS.ffffff+00` for the given instant (microseconds, truncated toward the past).
    public static func format(_ date: Date) -> String {
        let totalMicros = Int64((date.timeIntervalSince1970 * 1_000_000).rounded(.down))
        var days = totalMicros / 86_400_000_000
        var micros = totalMicros % 86_400_000_000
        if micros < 0 {
            micros += 86_400_000_000
            days -= 1
        }
        let (year, month, day) = civil(fromDays: days)
        let seconds = micros / 1_000_000
        let fraction = micros % 1_000_000
        return pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2) + " "
            + pad(seconds / 3600, 2) + ":" + pad(seconds / 60 % 60, 2) + ":" + pad(seconds % 60, 2)
            + "." + pad(fraction, 6) + "+00"
    }

    /// Parses the server's ISO output in UTC (`+00`); `nil` for anything else (BC dates, infinity).
    public static func parse(_ text: some Collection<UInt8>) -> Date? {
        let bytes = Array(text)
        // YYYY-MM-DD HH:MM:SS at least 19 bytes.
        guard bytes.count >= 22 else { return nil }
        func number(_ from: Int, _ count: Int) -> Int64? {
            var value: Int64 = 0
            for index in from..<(from + count) {
                let digit = bytes[index] &- UInt8(ascii: "0")
                guard digit < 10 else { return nil }
                value = value * 10 + Int64(digit)
            }
            return value
        }
        guard bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"), bytes[10] == UInt8(ascii: " "),
            bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":"),
            let year = number(0, 4), let month = number(5, 2), let day = number(8, 2),
            let hour = number(11, 2), let minute = number(14, 2), let second = number(17, 2)
        else { return nil }
        var index = 19
        var micros: Int64 = 0
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            var scale: Int64 = 100_000
            while index < bytes.count, let digit = number(index, 1) {
                micros += digit * scale
                scale /= 10
                index += 1
            }
        }
        // Offset: only UTC is expected since the session time zone is UTC.
        guard index + 3 == bytes.count, bytes[index] == UInt8(ascii: "+"),
            bytes[index + 1] == UInt8(ascii: "0"), bytes[index + 2] == UInt8(ascii: "0")
        else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        let secondsOfDay = hour * 3600 + minute * 60 + second
        let total = (days * 86_400 + secondsOfDay) * 1_000_000 + micros
        return Date(timeIntervalSince1970: Double(total) / 1_000_000)
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
    static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The proleptic Gregorian date of a day count since 1970-01-01.
    static func civil(fromDays days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return (year, month, day)
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }
}
