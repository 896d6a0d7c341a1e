package options

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/apikit-dev/apikit/authn/serviceaccount"
)

// TokenRequest is what the token command mints: a user token for User
// (with UID and Groups), for Audiences, valid for TTL.
type TokenRequest struct {
	User      string
	UID       string
	Groups    []string
	Audiences []string
	TTL       time.Duration
}

// newTokenCommand returns `<name> token`: it signs a user token with the
// server's service-account signing key, read from the same flags (and the
// same defaults: the development PKI's key in <data-dir>/pki/sa.key), so
// that what it prints is a bearer token the server accepts:
//
//	kubectl --token="$(wardle token --user alice --group dev --ttl 1h)" get flunders
func newTokenCommand(name string, o *ServerRunOptions) *cobra.Command {
	req := TokenRequest{TTL: time.Hour}
	cmd := &cobra.Command{
		Use:   "token --user NAME [--group GROUP]... [--ttl DURATION]",
		Short: "Print a bearer token for a user, signed with the server's service account signing key",
		Long: "token prints a bearer token that " + name + " accepts as the given user and groups: a JWT signed with the " +
			"service account signing key (--service-account-signing-key-file, or the development PKI's key in <data-dir>/pki/sa.key, " +
			"made when the server first starts), for the API audiences, valid for --ttl. Anyone holding the token is that user " +
			"until it expires: mint short-lived tokens, and keep the signing key private.",
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: false,
		RunE: func(cmd *cobra.Command, _ []string) error {
			token, err := o.MintUserToken(req, time.Now())
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), token)
			return err
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&req.User, "user", req.User, "The user name the token authenticates (required).")
	fs.StringVar(&req.UID, "uid", req.UID, "The user's UID.")
	fs.StringArrayVar(&req.Groups, "group", req.Groups, "A group of the user; repeat for several.")
	fs.DurationVar(&req.TTL, "ttl", req.TTL, "How long the token is valid.")
	fs.StringArrayVar(&req.Audiences, "audience", req.Audiences, "An audience of the token; repeat for several. Default: --api-audiences, else the issuers.")
	fs.StringVar(&o.Etcd.DataDir, "data-dir", o.Etcd.DataDir, "The server's data directory, whose pki/sa.key is the development PKI's signing key.")
	fs.StringVar(&o.SecureServing.CertDirectory, "cert-dir", o.SecureServing.CertDirectory, "The server's certificate directory; if blank, <data-dir>/pki.")
	fs.StringVar(&o.ServiceAccount.SigningKeyFile, "service-account-signing-key-file", o.ServiceAccount.SigningKeyFile,
		"The private key tokens are signed with, as given to the server.")
	fs.StringArrayVar(&o.ServiceAccount.Issuers, "service-account-issuer", o.ServiceAccount.Issuers,
		"The issuer tokens are signed as (the first given), as given to the server.")
	fs.StringSliceVar(&o.Authentication.APIAudiences, "api-audiences", o.Authentication.APIAudiences, "The server's API audiences, as given to the server.")
	cmd.SetHelpFunc(func(c *cobra.Command, _ []string) {
		fmt.Fprintf(c.OutOrStdout(), "%s\n\nUsage:\n  %s %s\n\nFlags:\n%s", c.Long, name, c.Use, c.Flags().FlagUsagesWrapped(helpColumns))
	})
	cmd.SetUsageFunc(func(c *cobra.Command) error {
		fmt.Fprintf(c.OutOrStderr(), "Usage:\n  %s %s\n\nFlags:\n%s", name, c.Use, c.Flags().FlagUsagesWrapped(helpColumns))
		return nil
	})
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%w\nRun '%s --help' for usage.", err, c.CommandPath())
	})
	return cmd
}

// MintUserToken signs a user token (serviceaccount.NewUserClaims) with
// the signing key the options name: --service-account-signing-key-file as
// the first --service-account-issuer, or else the development PKI's key
// (<cert-dir>/sa.key, which the server makes on first start) as
// DevServiceAccountIssuer unless an issuer is given. The audiences are
// req's, else --api-audiences, else the issuers: those the server accepts
// by default. It reads the key and writes nothing.
func (o *ServerRunOptions) MintUserToken(req TokenRequest, now time.Time) (string, error) {
	if req.User == "" {
		return "", errors.New("--user is required")
	}
	if strings.HasPrefix(req.User, serviceaccount.UsernamePrefix) {
		return "", fmt.Errorf("--user %q: user tokens cannot name service accounts", req.User)
	}
	if req.TTL <= 0 || req.TTL > MaxTokenExpiration {
		return "", fmt.Errorf("--ttl %s must be positive and at most 2^32 seconds", req.TTL)
	}
	sa := o.ServiceAccount
	keyFile, issuers := sa.SigningKeyFile, sa.Issuers
	if keyFile == "" {
		certDir := o.SecureServing.CertDirectory
		if certDir == "" {
			if o.Etcd.DataDir == "" {
				return "", errors.New("no signing key: give --service-account-signing-key-file, or --data-dir of a server with a development PKI")
			}
			certDir = filepath.Join(o.Etcd.DataDir, "pki")
		}
		keyFile = filepath.Join(certDir, serviceaccount.SigningKeyFile)
		if _, err := os.Stat(keyFile); err != nil {
			return "", fmt.Errorf("no signing key at %s (%w): start the server once so that its development PKI makes it, "+
				"or give --service-account-signing-key-file", keyFile, err)
		}
		if len(issuers) == 0 {
			issuers = []string{DevServiceAccountIssuer}
		}
	} else if len(issuers) == 0 {
		return "", errors.New("--service-account-signing-key-file requires --service-account-issuer")
	}
	key, err := serviceaccount.PrivateKeyFromFile(keyFile)
	if err != nil {
		return "", fmt.Errorf("signing key: %w", err)
	}
	g, err := serviceaccount.NewGenerator(issuers[0], key)
	if err != nil {
		return "", err
	}
	auds := req.Audiences
	if len(auds) == 0 {
		auds = o.Authentication.APIAudiences
	}
	if len(auds) == 0 {
		auds = issuers
	}
	claims, user := serviceaccount.NewUserClaims(req.User, req.UID, req.Groups, auds, req.TTL, now)
	return g.GenerateUserToken(claims, user)
}

// subcommandsHelp lists a command's subcommands for --help.
func subcommandsHelp(cmd *cobra.Command) string {
	var b strings.Builder
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			fmt.Fprintf(&b, "  %-10s %s\n", c.Name(), c.Short)
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return "\nCommands:\n" + b.String()
}
