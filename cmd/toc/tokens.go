package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/toc-project/toc/http/auth"
	"github.com/toc-project/toc/http/webhook"
	"github.com/toc-project/toc/internal/ratelog"
)

// tokensHelp is the help of toc tokens hash and toc tokens secret.
var tokensHelp = map[string]help{
	"hash": {usage: "tokens hash [TOKEN]\n\nprints the token_sha256 of TOKEN for --tokens-file; without TOKEN, of the first line\nof stdin, so that the token stays out of the shell's history",
		example: "toc tokens hash < token.txt"},
	"secret": {usage: "tokens secret\n\nprints a new webhook secret, whsec_..., for --webhook-secret or a namespace's webhook_secrets",
		example: "toc tokens secret"},
}

const tokensUsage = `usage: toc tokens hash [TOKEN]   the token_sha256 of TOKEN (without TOKEN: read from stdin)
       toc tokens secret         a new webhook secret, whsec_..., for --webhook-secret or a namespace's webhook_secrets

example:
  toc tokens hash < token.txt
  toc tokens secret`

// runTokens: toc tokens hash [TOKEN], printing the token_sha256 of a
// token for --tokens-file (without TOKEN it reads one line from stdin,
// so that the secret need not be in the shell's history), and toc tokens
// secret, printing a new webhook secret.
func runTokens(args []string, stdout, stderr io.Writer) error {
	if slices.ContainsFunc(args, isHelp) {
		if h, ok := tokensHelp[args[0]]; ok {
			h.write(stdout)
			return helpError{h}
		}
		fmt.Fprintln(stdout, tokensUsage)
		return flag.ErrHelp
	}
	if len(args) == 1 && args[0] == "secret" {
		fmt.Fprintln(stdout, webhook.NewSecret())
		return nil
	}
	if len(args) == 0 || args[0] != "hash" || len(args) > 2 {
		fmt.Fprintln(stderr, tokensUsage)
		return exitError{2}
	}
	var token string
	if len(args) == 2 {
		token = args[1]
	} else {
		line, err := bufio.NewReader(os.Stdin).ReadString('\n')
		if err != nil && err != io.EOF {
			return fmt.Errorf("read the token: %w", err)
		}
		token = strings.TrimRight(line, "\r\n")
	}
	if len(token) < auth.MinTokenLength {
		fmt.Fprintf(stderr, "toc: a token of a tokens file has at least %d characters\n", auth.MinTokenLength)
		return exitError{2}
	}
	fmt.Fprintln(stdout, auth.Hash(token))
	return nil
}

// openTokensFile opens --tokens-file, joined with the --api-token admins.
// Its reloads log through log without the rate limit of repeated
// warnings: each refusal is an operator's edit, logged with its reason,
// however soon after the last.
func openTokensFile(path string, namespaces []string, admins *auth.Set, log *slog.Logger) (*auth.File, error) {
	return auth.OpenFile(path, namespaces, admins, ratelog.Unlimited(log))
}
