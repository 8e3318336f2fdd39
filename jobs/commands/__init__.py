"""One module per CLI sub-command: argument parsing and printing only; the work lives in the libraries."""
