package flowcontrol

import (
	"github.com/prometheus/client_golang/prometheus"
)

// The controller's metrics, named as kube-apiserver's
// apiserver_flowcontrol_* series with Kobune's prefix.
var (
	nominalDesc = prometheus.NewDesc("kobune_apiserver_flowcontrol_nominal_limit_seats",
		"Seats a priority level has of its own: the server's seats × its shares / all shares.", []string{"priority_level"}, nil)
	executingDesc = prometheus.NewDesc("kobune_apiserver_flowcontrol_current_executing_requests",
		"Requests of a priority level running now (on its own or borrowed seats).", []string{"priority_level"}, nil)
	borrowedDesc = prometheus.NewDesc("kobune_apiserver_flowcontrol_current_borrowed_seats",
		"Seats a priority level is using that another level lent it.", []string{"priority_level"}, nil)
	inqueueDesc = prometheus.NewDesc("kobune_apiserver_flowcontrol_current_inqueue_requests",
		"Requests of a priority level waiting in its queues.", []string{"priority_level"}, nil)
	rejectedDesc = prometheus.NewDesc("kobune_apiserver_flowcontrol_rejected_requests_total",
		"Requests refused with 429, by priority level and reason (queue-full, concurrency-limit, time-out).", []string{"priority_level", "reason"}, nil)
)

// Describe is prometheus.Collector's.
func (c *Controller) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{nominalDesc, executingDesc, borrowedDesc, inqueueDesc, rejectedDesc} {
		ch <- d
	}
}

// Collect reports every level's figures at the moment of the scrape.
func (c *Controller) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range c.order {
		ch <- prometheus.MustNewConstMetric(nominalDesc, prometheus.GaugeValue, float64(l.limit), l.name)
		ch <- prometheus.MustNewConstMetric(executingDesc, prometheus.GaugeValue, float64(l.executing), l.name)
		ch <- prometheus.MustNewConstMetric(borrowedDesc, prometheus.GaugeValue, float64(l.borrowed), l.name)
		ch <- prometheus.MustNewConstMetric(inqueueDesc, prometheus.GaugeValue, float64(l.waiting), l.name)
		for _, r := range []string{ReasonQueueFull, ReasonConcurrencyLimit, ReasonTimeOut} {
			ch <- prometheus.MustNewConstMetric(rejectedDesc, prometheus.CounterValue, float64(l.rejected[r]), l.name, r)
		}
	}
}
