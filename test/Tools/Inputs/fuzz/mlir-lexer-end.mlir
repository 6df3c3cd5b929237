

// expected-error @+1 {{expected '{' to begin a region}}
shaderm.kernel @no_bod