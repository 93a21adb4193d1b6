// Package fieldaudit holds the test that every field of the API's types is
// either acted on by some component or named unsupported by the decoder
// (issue #10: hostNetwork and completionMode were stored and ignored).
package fieldaudit
