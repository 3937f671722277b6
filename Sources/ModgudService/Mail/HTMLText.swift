/// HTML text and attribute escaping, for the mails' HTML parts and the `/magic-login` page.
public enum HTMLText {
    /// `text` with `&`, `<`, `>`, `"` and `'` replaced by their entities.
    public static func escape(_ text: String) -> String {
        var out = ""
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(character)
            }
        }
        return out
    }
}
