package main

import (
	"fmt"
	"log"
	"net"
	"strconv"
	"time"
)

// serveUDP answers every datagram on addr with "labapp <version> on
// <hostname>" (a UDP Service's backend).
func (a *app) serveUDP(addr string) {
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		log.Fatalf("udp listen %s: %v", addr, err)
	}
	log.Printf("answering UDP on %s", addr)
	buf := make([]byte, 1500)
	for {
		_, from, err := pc.ReadFrom(buf)
		if err != nil {
			log.Printf("udp: %v", err)
			return
		}
		_, _ = pc.WriteTo([]byte(fmt.Sprintf("labapp %s on %s", version, a.hostname)), from)
	}
}

// udpClient sends count datagrams to target from one fixed source port
// (so they are one flow to conntrack), every interval, and prints each
// answer, or "timeout" (the UDP client of the end-to-end tests).
func udpClient(target string, sourcePort, count int, interval time.Duration) {
	raddr, err := net.ResolveUDPAddr("udp", target)
	if err != nil {
		log.Fatalf("udp client: %v", err)
	}
	conn, err := net.DialUDP("udp", &net.UDPAddr{Port: sourcePort}, raddr)
	if err != nil {
		log.Fatalf("udp client: %v", err)
	}
	defer conn.Close()
	buf := make([]byte, 1500)
	for i := range count {
		start := time.Now()
		if _, err := conn.Write([]byte("ping " + strconv.Itoa(i))); err != nil {
			fmt.Println("error", err)
		} else {
			_ = conn.SetReadDeadline(time.Now().Add(interval))
			if n, err := conn.Read(buf); err != nil {
				fmt.Println("timeout")
			} else {
				fmt.Println(string(buf[:n]))
			}
		}
		time.Sleep(max(0, interval-time.Since(start)))
	}
}
