/// Where the device authorization grant lives (RFC 8628, issue 69): the device's endpoint
/// (discovery's `device_authorization_endpoint`), the realm's approval page (section 3.2's
/// `verification_uri`) and its script, and the person's JSON endpoints.
enum DeviceGrantPaths {
    static let authorization = "/connect/device_authorization"
    static let page = "/device"
    static let script = "/device/approve.js"
    static let verify = "/connect/device/verify"
    static let approve = "/connect/device/approve"
    static let deny = "/connect/device/deny"
}
