"""Write services of the core domain. Every public function here is one transaction."""
