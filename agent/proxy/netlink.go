package proxy

import (
	"fmt"
	"strings"
	"time"

	gnft "github.com/google/nftables"
	"github.com/google/nftables/expr"
)

// Netlink writes incremental syncs straight to the kernel over netlink
// with github.com/google/nftables, in one batch the kernel applies
// atomically (as nft does). Why not nft for these too: before it applies
// even one element, nft reads the whole table into its cache — every
// chain and set; with 10,000 Services that alone takes over half a second
// — while the batch of one changed Service is a few messages. Full syncs
// stay with nft (knftables), where the text form is what an operator
// reads and the cache read is paid once.
type Netlink struct {
	table *gnft.Table
	// conn opens the connection (gnft.New; another in tests).
	conn func() (*gnft.Conn, error)
}

// NewNetlink returns a writer for the proxy's table in the calling
// process's network namespace.
func NewNetlink() *Netlink {
	return &Netlink{table: &gnft.Table{Family: gnft.TableFamilyIPv4, Name: Table}, conn: func() (*gnft.Conn, error) { return gnft.New() }}
}

// batch is one incremental sync's messages.
type batch struct {
	nl   *Netlink
	ops  int
	todo []func(c *gnft.Conn) error
}

func (n *Netlink) batch() *batch { return &batch{nl: n} }

func (b *batch) add(f func(c *gnft.Conn) error) {
	b.ops++
	b.todo = append(b.todo, f)
}

func (b *batch) chain(name string) *gnft.Chain { return &gnft.Chain{Table: b.nl.table, Name: name} }

func (b *batch) addSet(name string, timeout int32) {
	b.add(func(c *gnft.Conn) error {
		return c.AddSet(&gnft.Set{Table: b.nl.table, Name: name, KeyType: gnft.TypeIPAddr, Dynamic: true, HasTimeout: true,
			Timeout: time.Duration(timeout) * time.Second, Size: affinitySetSize}, nil)
	})
}

func (b *batch) writeChain(name string, rules []rule) {
	b.add(func(c *gnft.Conn) error {
		ch := c.AddChain(b.chain(name))
		c.FlushChain(ch)
		for _, r := range rules {
			c.AddRule(&gnft.Rule{Table: b.nl.table, Chain: ch, Exprs: r.exprs})
		}
		return nil
	})
}

func (b *batch) addElement(m, key, value string) {
	b.add(func(c *gnft.Conn) error {
		layout, el, err := mapElement(m, key)
		if err != nil {
			return err
		}
		if layout[1] == nil {
			if el.VerdictData, err = verdictOf(value); err != nil {
				return err
			}
		} else if el.Val, err = encode(layout[1], value); err != nil {
			return err
		}
		return c.SetAddElements(&gnft.Set{Table: b.nl.table, Name: m, IsMap: true}, []gnft.SetElement{el})
	})
}

func (b *batch) deleteElement(m, key string) {
	b.add(func(c *gnft.Conn) error {
		_, el, err := mapElement(m, key)
		if err != nil {
			return err
		}
		return c.SetDeleteElements(&gnft.Set{Table: b.nl.table, Name: m, IsMap: true}, []gnft.SetElement{el})
	})
}

// mapElement is the layout of map m and an element with key.
func mapElement(m, key string) ([2][]field, gnft.SetElement, error) {
	layout, ok := layouts[m]
	if !ok {
		return layout, gnft.SetElement{}, fmt.Errorf("no map %s", m)
	}
	k, err := encode(layout[0], key)
	return layout, gnft.SetElement{Key: k}, err
}

func (b *batch) flushChain(name string) {
	b.add(func(c *gnft.Conn) error { c.FlushChain(b.chain(name)); return nil })
}

func (b *batch) deleteChain(name string) {
	b.add(func(c *gnft.Conn) error { c.DelChain(b.chain(name)); return nil })
}

func (b *batch) deleteSet(name string) {
	b.add(func(c *gnft.Conn) error { c.DelSet(&gnft.Set{Table: b.nl.table, Name: name}); return nil })
}

// run sends the batch; the kernel applies all of it or nothing.
func (b *batch) run() error {
	c, err := b.nl.conn()
	if err != nil {
		return fmt.Errorf("netlink: %w", err)
	}
	for _, f := range b.todo {
		if err := f(c); err != nil {
			return fmt.Errorf("netlink: %w", err)
		}
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("netlink: %w", err)
	}
	return nil
}

// verdictOf parses the verdicts the proxy puts in its maps: "goto <chain>".
func verdictOf(v string) (*expr.Verdict, error) {
	chain, ok := strings.CutPrefix(v, "goto ")
	if !ok {
		return nil, fmt.Errorf("map verdict %q is not goto <chain>", v)
	}
	return &expr.Verdict{Kind: expr.VerdictGoto, Chain: chain}, nil
}
