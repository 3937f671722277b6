import HTTPTypes

/// What a console handler answers with: a template, its title and its values. The layout adds
/// the navigation, the operator and the CSRF token.
struct ConsolePage {
    var template: String
    var title: String
    var values: [String: Any] = [:]
    /// The navigation entry to mark current.
    var section: String?
    /// Links above the title: (label, path).
    var crumbs: [(String, String)] = []
    var status: HTTPResponse.Status = .ok
    var notice: String?
    var error: String?
    /// Answer with a redirect to this console path instead of the page.
    var redirect: String?

    static func redirect(_ path: String) -> ConsolePage {
        ConsolePage(template: "message", title: "", redirect: path)
    }
}

/// A refusal shown as a page: a status and one sentence.
struct ConsoleRefusal: Error {
    var status: HTTPResponse.Status
    var message: String
    /// The form field the refusal is about (its message is shown beside it).
    var field: String? = nil

    static func notFound(_ what: String) -> ConsoleRefusal { ConsoleRefusal(status: .notFound, message: "No such \(what).") }
    static func badForm(_ message: String) -> ConsoleRefusal { ConsoleRefusal(status: .badRequest, message: message) }
}
