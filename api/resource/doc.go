// Package resource implements Quantity, the fixed-point number used for cpu
// and memory ("500m", "0.5", "512Mi", "1Gi", "1e3"), mirroring Kubernetes'
// k8s.io/apimachinery/pkg/api/resource.
//
// A Quantity is stored exactly as a count of nano-units in a big.Int, so
// sums and comparisons never round. It prints in canonical form: the largest
// suffix of its own family (binary Ki/Mi/Gi..., decimal m/k/M/G..., or an
// exponent e3) that keeps the mantissa an integer, so "1024Mi" prints "1Gi",
// "0.5" prints "500m", and "1000" prints "1k". Values finer than a nano-unit
// are rounded up, as Kubernetes does.
package resource
