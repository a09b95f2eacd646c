package kafka

import (
	"errors"
	"testing"
)

// TestSSLPrincipalMapping runs the rules and subjects of Kafka's
// documentation (docs/security.html, "Customizing SSL User Name") and of its
// SslPrincipalMapperTest.
func TestSSLPrincipalMapping(t *testing.T) {
	for _, tc := range []struct {
		rules string
		cases map[string]string // subject -> name; "" is no rule applies
	}{
		{
			// Kafka's documented example.
			rules: `RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,
RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,
RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L,
DEFAULT`,
			cases: map[string]string{
				"CN=serviceuser,OU=ServiceUsers,O=Unknown,L=Unknown,ST=Unknown,C=Unknown": "serviceuser",
				"CN=adminUser,OU=Admin,O=Unknown,L=Unknown,ST=Unknown,C=Unknown":          "adminuser@admin",
				"O=no common name": "O=no common name",
			},
		},
		{
			rules: "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L, " +
				"RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U, RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U, DEFAULT",
			cases: map[string]string{
				"CN=Duke,OU=ServiceUsers,O=Org,C=US":        "duke",
				"CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US": "duke@sme",
				"cn=duke,ou=sme,dc=mycp,dc=com":             "DUKE@SME",
				"cN=duke,OU=JavaSoft,O=Sun Microsystems":    "DUKE",
				"OU=JavaSoft,O=Sun Microsystems,C=US":       "OU=JavaSoft,O=Sun Microsystems,C=US",
			},
		},
		{
			// A comma in the pattern, and an escaped comma in the subject.
			rules: `RULE:^CN=((\\, *|\w)+)(,.*|$)/$1/,DEFAULT`,
			cases: map[string]string{`CN=Tkac\, Adam,OU=ITZ,DC=geodis,DC=cz`: `Tkac\, Adam`},
		},
		{
			// No DEFAULT: an unmatched subject has no principal.
			rules: `RULE:^CN=([^,]+),O=payments$/$1/`,
			cases: map[string]string{"CN=app,O=payments": "app", "CN=app,O=billing": ""},
		},
		{
			// An escaped slash, $$-free literal text, and group 1 before a digit.
			rules: `RULE:^CN=(\w+)\/(\w+)$/svc-$2\/$1/`,
			cases: map[string]string{"CN=a/b": "svc-b/a"},
		},
		{
			rules: `RULE:^CN=(\w)(\w)$/$12/`, // $12 is group 1 and "2": there is no group 12
			cases: map[string]string{"CN=ab": "a2"},
		},
		{rules: "", cases: map[string]string{"CN=x": "CN=x"}},
		{rules: ",  , ,DEFAULT, ,", cases: map[string]string{"CN=x": "CN=x"}},
	} {
		m, err := ParseSSLPrincipalMappingRules(tc.rules)
		if err != nil {
			t.Fatalf("%q: %v", tc.rules, err)
		}
		for subject, want := range tc.cases {
			got, err := m.Name(subject)
			switch {
			case want == "" && !errors.Is(err, ErrPrincipalMapping):
				t.Errorf("%q on %q: %q %v, want no rule to apply", tc.rules, subject, got, err)
			case want != "" && (err != nil || got != want):
				t.Errorf("%q on %q: %q %v, want %q", tc.rules, subject, got, err, want)
			}
		}
	}
	// Kafka's SslPrincipalMapperTest valid and invalid rules.
	for _, r := range []string{
		"DEFAULT", "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/", "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
		"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/", "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L",
		"RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U", "RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/", "RULE:^CN=([^,DEFAULT,]+)(,.*|$)/$1/",
	} {
		if _, err := ParseSSLPrincipalMappingRules(r); err != nil {
			t.Errorf("valid rule %q: %v", r, err)
		}
	}
	for _, r := range []string{
		"default", "DEFAUL", "DEFAULT/L", "DEFAULT/U", "RULE:CN=(.*?),OU=ServiceUsers.*/$1",
		"rule:^CN=(.*?),OU=ServiceUsers.*$/$1/", "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/L", "RULE:^CN=(.*?),OU=ServiceUsers.*$/U", "RULE:^CN=(.*?),OU=ServiceUsers.*$/LU",
		"RULE:^CN=(.*$/$1/", "RULE:^CN=(.*)$/$2/",
	} {
		if m, err := ParseSSLPrincipalMappingRules(r); !errors.Is(err, ErrPrincipalMapping) {
			t.Errorf("invalid rule %q parsed as %v (%v)", r, m, err)
		}
	}
}
