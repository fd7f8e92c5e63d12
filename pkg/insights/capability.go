package insights

import "strings"

// capabilities names the capability an entitlement key grants, as Xcode's Signing & Capabilities
// pane calls it.
var capabilities = map[string]string{
	"aps-environment":                                        "Push Notifications",
	"com.apple.developer.aps-environment":                    "Push Notifications",
	"beta-reports-active":                                    "TestFlight",
	"get-task-allow":                                         "Debugging",
	"inter-app-audio":                                        "Inter-App Audio",
	"keychain-access-groups":                                 "Keychain Sharing",
	"com.apple.developer.applesignin":                        "Sign in with Apple",
	"com.apple.developer.associated-appclip-app-identifiers": "App Clips",
	"com.apple.developer.associated-domains":                 "Associated Domains",
	"com.apple.developer.authentication-services.autofill-credential-provider": "AutoFill Credential Provider",
	"com.apple.developer.ClassKit-environment":                                 "ClassKit",
	"com.apple.developer.coremedia.hls.low-latency":                            "Low Latency HLS",
	"com.apple.developer.default-data-protection":                              "Data Protection",
	"com.apple.developer.devicecheck.appattest-environment":                    "App Attest",
	"com.apple.developer.family-controls":                                      "Family Controls",
	"com.apple.developer.game-center":                                          "Game Center",
	"com.apple.developer.healthkit":                                            "HealthKit",
	"com.apple.developer.healthkit.access":                                     "HealthKit",
	"com.apple.developer.homekit":                                              "HomeKit",
	"com.apple.developer.icloud-container-development-container-identifiers":   "iCloud",
	"com.apple.developer.icloud-container-environment":                         "iCloud",
	"com.apple.developer.icloud-container-identifiers":                         "iCloud",
	"com.apple.developer.icloud-services":                                      "iCloud",
	"com.apple.developer.in-app-payments":                                      "Apple Pay",
	"com.apple.developer.kernel.increased-memory-limit":                        "Increased Memory Limit",
	"com.apple.developer.networking.HotspotConfiguration":                      "Hotspot Configuration",
	"com.apple.developer.networking.multipath":                                 "Multipath",
	"com.apple.developer.networking.networkextension":                          "Network Extensions",
	"com.apple.developer.networking.vpn.api":                                   "Personal VPN",
	"com.apple.developer.networking.wifi-info":                                 "Access Wi-Fi Information",
	"com.apple.developer.nfc.readersession.formats":                            "NFC Tag Reading",
	"com.apple.developer.pass-type-identifiers":                                "Wallet",
	"com.apple.developer.siri":                                                 "Siri",
	"com.apple.developer.ubiquity-container-identifiers":                       "iCloud",
	"com.apple.developer.ubiquity-kvstore-identifier":                          "iCloud",
	"com.apple.developer.usernotifications.communication":                      "Communication Notifications",
	"com.apple.developer.usernotifications.critical-alerts":                    "Critical Alerts",
	"com.apple.developer.usernotifications.time-sensitive":                     "Time Sensitive Notifications",
	"com.apple.developer.weatherkit":                                           "WeatherKit",
	"com.apple.external-accessory.wireless-configuration":                      "Wireless Accessory Configuration",
	"com.apple.security.application-groups":                                    "App Groups",
	"com.apple.security.app-sandbox":                                           "App Sandbox",
	"com.apple.security.get-task-allow":                                        "Debugging",
	"com.apple.security.network.client":                                        "Outgoing Network Connections",
	"com.apple.security.network.server":                                        "Incoming Network Connections",
}

// Capability returns the capability an entitlement key grants, as Xcode names it ("Push
// Notifications" for aps-environment), or "" when the key is not one Slipway knows.
func Capability(key string) string {
	if c, ok := capabilities[key]; ok {
		return c
	}
	if strings.HasPrefix(key, "com.apple.developer.carplay-") {
		return "CarPlay"
	}
	return ""
}
