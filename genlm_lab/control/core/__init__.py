"""What every room of `control` shares: EOS and EOT, token types, lazy weight rows, token helpers."""
